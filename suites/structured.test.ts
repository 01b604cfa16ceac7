import { registerChecks } from './support/register.ts';
import { checks } from './structured.ts';

registerChecks('structured', checks);
