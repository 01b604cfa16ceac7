import { registerChecks } from './support/register.ts';
import { checks } from './ollama.ts';
registerChecks('ollama', checks);
