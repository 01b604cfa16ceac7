import { registerChecks } from './support/register.ts';
import { checks } from './sse.ts';
registerChecks('sse', checks);
