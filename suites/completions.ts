// Family `completions`: the legacy /v1/completions stream (object "text_completion", choices[].text), same SSE
// framing as chat. References: OpenAI API reference "Completions (legacy)": stream — "tokens will be sent as data-only
// server-sent events as they become available, with the stream terminated by a data: [DONE] message"; WHATWG HTML §9.2.6.
// One recorded stream per run, shared by the family's checks.

import { generationBody, send } from '../lib/exchange/exchange.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import { judgeChunkSchema } from '../lib/grading/sse-chunks.ts';
import {
  judgeContentType,
  judgeDataPrefix,
  judgeDoneTerminator,
  judgeEventTerminator,
  judgeOneJsonPerEvent,
} from '../lib/grading/sse-framing.ts';
import { assertReached, evidenceOf, makeSample, type Sample, unusable } from '../lib/grading/sse-samples.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { pass } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'completions',
  order: 30,
  what: 'the same SSE framing for the legacy `/v1/completions` stream',
};

const COMPLETIONS =
  'OpenAI API reference, Completions (legacy): stream = data-only server-sent events of text_completion objects, terminated by data: [DONE] (https://platform.openai.com/docs/api-reference/completions/create)';

async function completionsStream(ctx: CheckContext): Promise<SharedRecording<Sample>> {
  return shared(
    ctx,
    'completions',
    async () => {
      const x = await send(
        ctx,
        'openai-completions',
        generationBody(ctx, 'openai-completions', {
          prompt: `[request ${ctx.nonce()}] Once upon a time, in a small café in Zürich,`,
          maxTokens: 16,
          stream: true,
        }),
      );
      assertReached(x.rec);
      return makeSample('/v1/completions stream', x.rec);
    },
    (s) => [s.rec],
  );
}

async function judged(ctx: CheckContext, judge: (s: Sample) => Verdict): Promise<Verdict> {
  const r = await completionsStream(ctx);
  if (r.incomplete) return incompleteVerdict(r, 'the shared /v1/completions stream was recorded');
  return unusable([r.value], 'streamed /v1/completions') ?? judge(r.value);
}

/** The four framing judges of the sse family, applied to this stream; every failing one is reported. */
function judgeFraming(s: Sample): Verdict {
  const parts: Array<[string, Verdict]> = [
    ['content type', judgeContentType([s])],
    ['event terminator', judgeEventTerminator([s])],
    ['data: prefix', judgeDataPrefix([s])],
    ['one JSON object per event', judgeOneJsonPerEvent([s])],
  ];
  const failed = parts.filter(([, v]) => v.outcome === 'fail');
  if (failed.length) {
    return {
      outcome: 'fail',
      message:
        `The /v1/completions stream MUST use SSE framing: ${failed.length} of ${parts.length} framing rules broken.\n` +
        failed.map(([name, v]) => `[${name}] ${v.message}`).join('\n'),
      evidence: evidenceOf([s]),
    };
  }
  return pass(parts.map(([name, v]) => `${name}: ${v.message}`).join('; '));
}

const base = { requires: ['openai-completions'] as CheckDef['requires'], timeoutMs: 90_000 };

export const checks: CheckDef[] = [
  {
    ...base,
    id: 'completions.framing',
    title:
      '/v1/completions streams are well-framed SSE (text/event-stream, data: lines, one JSON object per event, blank-line terminated)',
    level: 'MUST',
    rationale:
      'Clients parse the completions stream with the same SSE reader as chat; broken framing loses or merges chunks.',
    reference: `${COMPLETIONS}; WHATWG HTML §9.2.6 "Interpreting an event stream"`,
    run: (ctx) => judged(ctx, judgeFraming),
  },
  {
    ...base,
    id: 'completions.done-terminator',
    title: 'data: [DONE] ends the /v1/completions stream',
    level: 'MUST',
    dependsOn: ['completions.framing'],
    rationale: 'Clients stop reading at [DONE]; without it they wait for a timeout or report a truncated completion.',
    reference: COMPLETIONS,
    run: (ctx) => judged(ctx, (s) => judgeDoneTerminator([s])),
  },
  {
    ...base,
    id: 'completions.chunk-schema',
    title: 'every /v1/completions chunk is a text_completion object; id and model stable',
    level: 'MUST',
    dependsOn: ['completions.framing'],
    rationale:
      'Typed clients validate object "text_completion" and read choices[].text; a chat-shaped chunk breaks them.',
    reference:
      'OpenAI API reference, the completion object (id, object "text_completion", created, model, choices[].text, finish_reason)',
    thresholds: {
      createdSlackS: {
        value: 2,
        why: "some servers stamp each chunk with the current time; allow that drift over the stream's duration plus this many seconds",
      },
    },
    run: (ctx) =>
      judged(ctx, (s) =>
        judgeChunkSchema([s], {
          schemaFile: 'text-completion-chunk.schema.json',
          objectName: 'text_completion',
          createdSlackS: ctx.threshold('createdSlackS'),
        }),
      ),
  },
];

export const proofs: Proof[] = [
  passProof('completions.framing', { messageIncludes: ['each ended by a blank line', 'one JSON object per event'] }),
  faultProof('completions.framing', 'completions-no-blank-line', ['[event terminator]', 'blank line']),
  passProof('completions.done-terminator', {
    messageIncludes: ['[DONE] is the last event and the body ends after it'],
  }),
  faultProof('completions.done-terminator', 'completions-no-done', ['no "data: [DONE]" event']),
  passProof('completions.chunk-schema', { messageIncludes: ['chunks valid text_completion; id and model stable'] }),
  faultProof('completions.chunk-schema', 'completions-wrong-object', [
    'text_completion',
    '/object must be equal to constant',
  ]),
];
