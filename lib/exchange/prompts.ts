// Prompts of a target token length, calibrated against the server's own usage.prompt_tokens
// (tokenizers and chat templates differ), each starting with text unique to the request and the run.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ROOT } from '../config/profile.ts';
import type { LocalSlice, Requester } from '../model/check.ts';
import { NotMeasurable } from '../model/verdict.ts';
import { chat, describeExchange, generationBody } from './exchange.ts';

const CORPUS = readFileSync(resolve(ROOT, 'fixtures', 'prompt-corpus.txt'), 'utf8')
  .split(/\s+/)
  .filter(Boolean);

/** n words of filler, starting at an offset so different prompts differ. */
export function filler(words: number, offset = 0): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(CORPUS[(i + offset) % CORPUS.length]!);
  return out.join(' ');
}

interface Calibration {
  tokensPerWord: number;
  /** Template + instruction + nonce tokens around the filler. */
  overhead: number;
  source: string;
}

/** Calibrations of this run, per profile: two probes each, once. */
const CALIBRATIONS: LocalSlice<Map<string, Calibration>> = { name: 'calibrations', create: () => new Map() };
const INSTRUCTION = 'Read the notes below, then continue writing in the same style.';

async function promptTokens(ctx: Requester, words: number): Promise<number> {
  const x = await chat(
    ctx,
    generationBody(ctx, 'openai-chat', {
      prompt: `[request ${ctx.nonce()}] ${INSTRUCTION}\n${filler(words)}`,
      maxTokens: 1,
      stream: false,
    }),
  );
  const n = (x.json as { usage?: { prompt_tokens?: unknown } } | undefined)?.usage?.prompt_tokens;
  if (x.rec.status !== 200 || typeof n !== 'number')
    throw new NotMeasurable(
      `cannot build prompts of a known length: prompt calibration failed: ${describeExchange(x)}; usage.prompt_tokens=${JSON.stringify(n)}${x.jsonError ? ` (${x.jsonError.slice(0, 200)})` : ''}`,
    );
  return n;
}

/** Measure tokens per word on this server (two probes), cached per profile. */
export async function calibrate(ctx: Requester): Promise<Calibration> {
  const calibrations = ctx.memory.local(CALIBRATIONS);
  const cached = calibrations.get(ctx.profile.id);
  if (cached) return cached;
  const a = 64;
  const b = 256;
  const [pa, pb] = [await promptTokens(ctx, a), await promptTokens(ctx, b)];
  const tokensPerWord = Math.max(0.2, (pb - pa) / (b - a));
  const cal = {
    tokensPerWord,
    overhead: Math.max(0, pa - a * tokensPerWord),
    source: `usage.prompt_tokens at ${a} and ${b} words: ${pa}, ${pb}`,
  };
  calibrations.set(ctx.profile.id, cal);
  return cal;
}

/** Words of filler for a target prompt size in tokens. */
function wordsFor(cal: Calibration, targetTokens: number): number {
  return Math.max(1, Math.round((targetTokens - cal.overhead) / cal.tokensPerWord));
}

/** A unique prompt of about targetTokens prompt tokens (as this server counts them). */
export async function promptOfTokens(
  ctx: Requester,
  targetTokens: number,
  offset = 0,
): Promise<{ prompt: string; expectedTokens: number }> {
  const cal = await calibrate(ctx);
  const words = wordsFor(cal, targetTokens);
  return {
    prompt: `[request ${ctx.nonce()}] ${INSTRUCTION}\n${filler(words, offset)}`,
    expectedTokens: Math.round(cal.overhead + words * cal.tokensPerWord),
  };
}
