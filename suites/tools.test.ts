import { registerChecks } from './support/register.ts';
import { checks } from './tools.ts';

registerChecks('tools', checks);
