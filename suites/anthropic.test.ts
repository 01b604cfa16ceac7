import { registerChecks } from './support/register.ts';
import { checks } from './anthropic.ts';
registerChecks('anthropic', checks);
