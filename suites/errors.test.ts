import { registerChecks } from './support/register.ts';
import { checks } from './errors.ts';

registerChecks('errors', checks);
