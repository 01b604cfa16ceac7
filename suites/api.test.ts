import { registerChecks } from './support/register.ts';
import { checks } from './api.ts';

registerChecks('api', checks);
