import { registerChecks } from './support/register.ts';
import { checks } from './metrics.ts';
registerChecks('metrics', checks);
