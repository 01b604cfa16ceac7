// Family `ollama`: Ollama's native streaming API (/api/chat, NDJSON). Reference: Ollama API docs
// (https://github.com/ollama/ollama/blob/main/docs/api.md, "Generate a chat completion"): a stream of JSON objects, one per line; the final object has done: true, done_reason
// and the statistics (total_duration, load_duration, prompt_eval_count, prompt_eval_duration, eval_count,
// eval_duration, in nanoseconds). One recorded stream per run, shared by the family's checks.

import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { generationBody, send } from '../lib/exchange/exchange.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import {
  evidence,
  judgeDoneLine,
  judgeNdjsonFraming,
  makeNdjsonSample,
  type NdjsonSample,
} from '../lib/grading/ollama.ts';
import { assertReached } from '../lib/grading/sse-samples.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { fail } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'ollama',
  order: 50,
  what: "Ollama's native NDJSON stream (`/api/chat`) and its final statistics",
};

const OLLAMA_API =
  'Ollama API docs, POST /api/chat streaming: a stream of JSON objects (application/x-ndjson), the last with done: true and the final statistics (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion)';

async function chatStream(ctx: CheckContext): Promise<SharedRecording<NdjsonSample>> {
  return shared(
    ctx,
    'ollama',
    async () => {
      const x = await send(
        ctx,
        'ollama-native',
        generationBody(ctx, 'ollama-native', {
          prompt: `[request ${ctx.nonce()}] Write one short sentence about a river.`,
          maxTokens: 16,
          stream: true,
        }),
      );
      assertReached(x.rec);
      return makeNdjsonSample(x.rec);
    },
    (s) => [s.rec],
  );
}

async function judged(ctx: CheckContext, judge: (s: NdjsonSample) => Verdict): Promise<Verdict> {
  const r = await chatStream(ctx);
  if (r.incomplete) return incompleteVerdict(r, 'the shared /api/chat stream was recorded');
  const s = r.value;
  if (s.rec.status !== 200 || (s.rec.failure && s.rec.reads.length === 0)) {
    return fail(
      {
        requirement: 'A streamed /api/chat request MUST be answered with HTTP 200 and an NDJSON body.',
        expected: 'HTTP 200, application/x-ndjson',
        actual: `${s.rec.failure ? `${s.rec.failure.kind}: ${s.rec.failure.message} ` : ''}HTTP ${s.rec.status ?? '-'}`,
        bytes: escapeBytes(s.rec.body, 300),
      },
      undefined,
      evidence(s),
    );
  }
  return judge(s);
}

const base = { requires: ['ollama-native'] as CheckDef['requires'], timeoutMs: 90_000 };

export const checks: CheckDef[] = [
  {
    ...base,
    id: 'ollama.ndjson-framing',
    title: '/api/chat streams newline-delimited JSON, one object per line',
    level: 'MUST',
    rationale:
      'Ollama clients split the body on newlines and parse each line; SSE framing or partial lines break every one of them.',
    reference: OLLAMA_API,
    run: (ctx) => judged(ctx, judgeNdjsonFraming),
  },
  {
    ...base,
    id: 'ollama.done-line',
    title: 'the /api/chat stream ends with one done: true line carrying the statistics',
    level: 'MUST',
    rationale:
      'Clients stop at done: true and read eval_count / eval_duration from it; without it they hang or report no speed.',
    reference: OLLAMA_API,
    run: (ctx) => judged(ctx, judgeDoneLine),
  },
];

export const proofs: Proof[] = [
  passProof('ollama.ndjson-framing', { messageIncludes: ['NDJSON lines, each one JSON object'] }),
  faultProof('ollama.ndjson-framing', 'ollama-sse-instead-of-ndjson', ['text/event-stream', 'SSE framing']),
  passProof('ollama.done-line', { messageIncludes: ['last line done: true'] }),
  faultProof('ollama.done-line', 'ollama-no-done-line', ['no line with "done": true']),
];
