// When a capacity run could not judge its streams' delivery (every token within our client's lag), answers of two
// lengths at one stream tell a held answer from a fast decode (lib/grading/held-answer.ts): a few requests, sent only
// then, interleaved so both lengths meet the same server.
import { chat, type Exchange, generationBody } from '../exchange/exchange.ts';
import { promptOfTokens } from '../exchange/prompts.ts';
import { served } from '../exchange/served.ts';
import { type HeldJudgement, judgeHeldByLength, type LengthSample } from '../grading/held-answer.ts';
import type { CheckContext } from '../model/check.ts';
import type { Recording } from '../model/types.ts';

/** Answers of each length: medians of three (a timing verdict is never one sample). */
const PER_LENGTH = 3;

/** The shorter answers' share of the run's output length: three quarters of the decode time between the two. */
const SHORT_SHARE = 0.25;

const sampleOf = (x: Exchange): LengthSample | undefined => {
  const ttftMs = x.metrics?.ttftMs;
  const tokens = x.events?.usage?.completion_tokens ?? x.metrics?.completionTokens ?? x.events?.tokens.length;
  return served(x) && ttftMs !== undefined && tokens !== undefined ? { tokens, ttftMs, e2eMs: x.rec.tEnd } : undefined;
};

/** The two lengths' answers' time at one stream, when it fits `deadline` (performance.now()); their recordings kept. */
export async function deliveryByLength(
  ctx: CheckContext,
  o: { inputTokens: number; outputTokens: number; e2eMs: number; deadline: number },
): Promise<{ judgement: HeldJudgement; recordings: Recording[] }> {
  const long = o.outputTokens;
  const short = Math.max(1, Math.round(long * SHORT_SHARE));
  const cost = PER_LENGTH * o.e2eMs * (1 + SHORT_SHARE) * 1.5;
  if (performance.now() + cost > o.deadline)
    return {
      judgement: {
        kind: 'unknown',
        detail: `not measured: it would not fit the time left (about ${Math.ceil(cost / 1000)} s)`,
      },
      recordings: [],
    };
  const samples: Record<'short' | 'long', LengthSample[]> = { short: [], long: [] };
  const recordings: Recording[] = [];
  for (let i = 0; i < 2 * PER_LENGTH && !ctx.signal.aborted; i++) {
    const which = i % 2 ? 'long' : 'short';
    const { prompt } = await promptOfTokens(ctx, o.inputTokens, 1000 + i * 37);
    const body = generationBody(ctx, 'openai-chat', {
      prompt,
      maxTokens: which === 'long' ? long : short,
      stream: true,
      exactLength: true,
      extra: { stream_options: { include_usage: true } },
    });
    const x = await chat(ctx, body);
    recordings.push(x.rec);
    const s = sampleOf(x);
    if (s) samples[which].push(s);
  }
  return { judgement: judgeHeldByLength(samples.short, samples.long), recordings };
}
