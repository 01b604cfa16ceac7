// Guards on a live stream, so a server that never stops cannot hold a check (or our memory) for long: a stream far
// past its max_tokens, or one line that never ends, is cut and recorded as `overflow` (the server's failure).
import type { StreamControl } from './recorder.ts';
import { CAPS } from './transport.ts';

type OnRead = (t: number, bytes: Uint8Array, control: StreamControl, recorded?: boolean) => void;

/** The token limit a generation body asks for (max_tokens, max_completion_tokens, options.num_predict). */
function requestedMaxTokens(body: unknown): number | undefined {
  const b = body as
    | { max_tokens?: unknown; max_completion_tokens?: unknown; options?: { num_predict?: unknown } }
    | undefined;
  const v = b?.max_tokens ?? b?.max_completion_tokens ?? b?.options?.num_predict;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/**
 * Token events allowed before a stream counts as runaway. Events are not tokens (an event may carry several), so a
 * correct server never sends more events than max_tokens; the margin keeps reasoning-budget quirks clear of it.
 */
export const runawayLimit = (maxTokens: number) => 4 * maxTokens + 64;

export function streamGuards(body: unknown): {
  wrap(inner: OnRead): OnRead;
  onToken(count: number): void;
  /** The stream was cut for running past max_tokens (evidence that it would not end: lib/measure/deadline-evidence.ts). */
  readonly ranAway: boolean;
} {
  const maxTokens = requestedMaxTokens(body);
  let control: StreamControl | undefined;
  let lineBytes = 0;
  let ranAway = false;
  return {
    get ranAway() {
      return ranAway;
    },
    wrap: (inner) => (t, bytes, c, recorded) => {
      control = c;
      // Bytes since the last line end (LF or CR): the parser would buffer them all.
      const nl = Math.max(bytes.lastIndexOf(0x0a), bytes.lastIndexOf(0x0d));
      lineBytes = nl === -1 ? lineBytes + bytes.length : bytes.length - nl - 1;
      if (lineBytes > CAPS.lineBytes) {
        c.overflow(`one line of the stream went on past ${CAPS.lineBytes / 2 ** 20} MiB without a newline (line cap)`);
        return;
      }
      inner(t, bytes, c, recorded);
    },
    onToken(count) {
      if (maxTokens !== undefined && count > runawayLimit(maxTokens)) {
        ranAway = true;
        control?.overflow(
          `the server kept streaming past max_tokens: ${count} token events for max_tokens ${maxTokens} and no end of stream (cut at ${runawayLimit(maxTokens)})`,
        );
      }
    },
  };
}
