import { registerChecks } from './support/register.ts';
import { checks } from './clients.ts';
registerChecks('clients', checks);
