import { registerChecks } from './support/register.ts';
import { checks } from './context.ts';

registerChecks('context', checks);
