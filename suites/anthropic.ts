// Family `anthropic`: the Anthropic Messages stream (/v1/messages, stream: true). Reference: Anthropic API docs,
// "Streaming Messages": each event is an `event: <type>` line plus a `data: <json>` line whose `type` is the same;
// flow message_start → (content_block_start, content_block_delta…, content_block_stop)… → message_delta → message_stop,
// with ping events anywhere and error events on failure. One recorded stream per run, shared by the family's checks.

import { generationBody, send } from '../lib/exchange/exchange.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import { judgeEventLines, judgeEventSequence } from '../lib/grading/anthropic.ts';
import { assertReached, makeSample, type Sample, unusable } from '../lib/grading/sse-samples.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'anthropic',
  order: 40,
  what: 'the Anthropic Messages event sequence (`/v1/messages`, streamed)',
};

const STREAMING =
  'Anthropic API docs, Streaming Messages: event types and event flow (https://docs.anthropic.com/en/api/messages-streaming)';

async function messagesStream(ctx: CheckContext): Promise<SharedRecording<Sample>> {
  return shared(
    ctx,
    'anthropic',
    async () => {
      const x = await send(
        ctx,
        'anthropic-messages',
        generationBody(ctx, 'anthropic-messages', {
          prompt: `[request ${ctx.nonce()}] Write one short sentence about a river.`,
          maxTokens: 16,
          stream: true,
        }),
      );
      assertReached(x.rec);
      return makeSample('/v1/messages stream', x.rec);
    },
    (s) => [s.rec],
  );
}

async function judged(ctx: CheckContext, judge: (s: Sample) => Verdict): Promise<Verdict> {
  const r = await messagesStream(ctx);
  if (r.incomplete) return incompleteVerdict(r, 'the shared /v1/messages stream was recorded');
  return unusable([r.value], 'streamed /v1/messages') ?? judge(r.value);
}

const base = { requires: ['anthropic-messages'] as CheckDef['requires'], timeoutMs: 90_000 };

export const checks: CheckDef[] = [
  {
    ...base,
    id: 'anthropic.event-lines',
    title: 'every Messages stream event has an event: line matching its data type',
    level: 'MUST',
    rationale: 'Anthropic SDKs dispatch on the SSE event name; data-only events are ignored or misrouted.',
    reference: `${STREAMING}; WHATWG HTML §9.2.6 (event field)`,
    run: (ctx) => judged(ctx, judgeEventLines),
  },
  {
    ...base,
    id: 'anthropic.event-sequence',
    title: 'Messages stream events follow message_start … content blocks … message_delta → message_stop',
    level: 'MUST',
    dependsOn: ['anthropic.event-lines'],
    rationale:
      'SDKs build the message with a state machine over this flow; a delta before its block or a missing message_stop breaks it.',
    reference: STREAMING,
    run: (ctx) => judged(ctx, judgeEventSequence),
  },
];

export const proofs: Proof[] = [
  passProof('anthropic.event-lines', { messageIncludes: ['each with an event: line matching its data type'] }),
  faultProof('anthropic.event-lines', 'anthropic-no-event-lines', ['have no "event:" line', 'message_start']),
  passProof('anthropic.event-sequence', {
    messageIncludes: ['event flow message_start → content_block_start', 'message_stop'],
  }),
  faultProof('anthropic.event-sequence', 'anthropic-wrong-order', [
    'content_block_delta for index 0 before its content_block_start',
  ]),
  faultProof('anthropic.event-sequence', 'anthropic-no-message-stop', ['no message_stop event', 'message_delta']),
];
