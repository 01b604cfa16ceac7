import { registerChecks } from './support/register.ts';
import { checks } from './parallel.ts';
registerChecks('parallel', checks);
