import { registerChecks } from './support/register.ts';
import { checks } from './api-last.ts';

// Family `api` (ids api.*), in its own file so it runs last (vitest.config.ts FAMILY_ORDER).
registerChecks('api', checks, 'api-last');
