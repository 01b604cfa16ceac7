// Was a streamed answer served? Generated tokens arrive as text, or are only counted by usage: a model can emit
// tokens that decode to nothing a server will send (llama-server holds back the incomplete UTF-8 of byte tokens;
// a random-weight model repeating one such token streams 8 tokens as no text at all, usage.completion_tokens 8).
// Such an answer was served — the timing checks count it by usage and leave it out of what needs token times.
import type { Exchange } from './exchange.ts';

/** Completion tokens of a complete, error-free stream that carried no text (by usage), else undefined. */
export function textlessTokens(x: Exchange): number | undefined {
  const e = x.events;
  if (x.rec.status !== 200 || x.rec.failure || !e || e.tokens.length > 0 || e.errors.length > 0) return undefined;
  if (!e.done && e.finishReasons.length === 0) return undefined;
  const n = e.usage?.completion_tokens;
  return n !== undefined && n > 0 ? n : undefined;
}

/** HTTP 200, complete, with generated tokens: streamed as text, or counted by usage where they decode to no text. */
export function served(x: Exchange): boolean {
  return (
    x.rec.status === 200 && !x.rec.failure && ((x.events?.tokens.length ?? 0) > 0 || textlessTokens(x) !== undefined)
  );
}

/** A note naming how many answers were served as tokens without text, or '' when none were. */
export function textlessNote(xs: readonly Exchange[]): string {
  const n = xs.filter((x) => textlessTokens(x) !== undefined);
  if (n.length === 0) return '';
  return ` (${n.length} of ${xs.length} answer(s) served ${n.map((x) => textlessTokens(x)).join(', ')} token(s) by usage that decode to no text — e.g. byte tokens whose incomplete UTF-8 the server holds back; counted by usage, left out of token timing)`;
}
