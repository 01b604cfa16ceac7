import { registerChecks } from './support/register.ts';
import { checks } from './cycles.ts';
registerChecks('cycles', checks);
