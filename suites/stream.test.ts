import { registerChecks } from './support/register.ts';
import { checks } from './stream.ts';

registerChecks('stream', checks);
