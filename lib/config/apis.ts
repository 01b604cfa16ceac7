// The APIs a server may offer, by the names a profile, --apis and CONFORMANCE_APIS use. What is named is declared
// (never probed); what is not is discovered at setup (lib/server/api-discovery.ts).
import type { ApiFlavour } from '../model/types.ts';

export const API_FLAVOURS: readonly ApiFlavour[] = [
  'openai-chat',
  'openai-completions',
  'anthropic-messages',
  'ollama-native',
];

/** Shorter names a person types: the family names of --only (`completions`, `anthropic`, `ollama`). */
const ALIASES: Record<string, ApiFlavour> = {
  chat: 'openai-chat',
  completions: 'openai-completions',
  anthropic: 'anthropic-messages',
  ollama: 'ollama-native',
};

/** `openai-chat,ollama` → the flavours named; throws naming the unknown one and every valid name. */
export function parseApis(raw: string, what = '--apis'): ApiFlavour[] {
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const valid = `${API_FLAVOURS.join(', ')} (or ${Object.keys(ALIASES).join(', ')})`;
  if (!names.length) throw new Error(`${what} needs a comma-separated list of APIs: ${valid}`);
  const out: ApiFlavour[] = [];
  for (const n of names) {
    const api = (API_FLAVOURS as readonly string[]).includes(n) ? (n as ApiFlavour) : ALIASES[n];
    if (!api) throw new Error(`${what}: unknown API "${n}"; the APIs are ${valid}`);
    if (!out.includes(api)) out.push(api);
  }
  return out;
}
