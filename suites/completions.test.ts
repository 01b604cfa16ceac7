import { registerChecks } from './support/register.ts';
import { checks } from './completions.ts';
registerChecks('completions', checks);
