// parallel.isolation's grading (not a timing verdict, but a pure function of what the check recorded, like the
// others).

import type { Verdict } from '../model/types.ts';
import { fail, inconclusive, pass } from '../model/verdict.ts';

export interface IsolationStream {
  label: string;
  nonce: string;
  status?: number;
  failure?: string;
  /** Distinct chunk ids seen in the stream. */
  ids: readonly string[];
  /** Distinct model names seen in the stream. */
  models: readonly string[];
  text: string;
  /** The answer the same request got alone (compared only where the profile declares determinism). */
  soloText?: string;
}

/**
 * parallel.isolation: each concurrent stream keeps one id of its own and the configured model; where the profile
 * declares determinism, each answer equals its solo answer; elsewhere each carries its own nonce and no other's.
 * When the solo answers do not echo their nonce (a model that cannot echo) and no determinism is declared: inconclusive.
 */
export function gradeIsolation(input: {
  streams: readonly IsolationStream[];
  deterministic: boolean;
  model: string;
  soloEchoes: boolean;
}): Verdict {
  const { streams } = input;
  const violations: string[] = [];
  const broken = streams.filter((s) => s.status !== 200 || s.failure !== undefined);
  for (const s of broken) violations.push(`${s.label}: ${s.failure ?? `HTTP ${s.status}`}`);
  const idOwners = new Map<string, string[]>();
  for (const s of streams) {
    if (s.ids.length > 1)
      violations.push(
        `${s.label}: chunk id changes within the stream (${s.ids
          .slice(0, 4)
          .map((x) => JSON.stringify(x))
          .join(', ')})`,
      );
    for (const id of s.ids) idOwners.set(id, [...(idOwners.get(id) ?? []), s.label]);
    const wrongModel = s.models.filter((m) => m !== input.model);
    if (s.models.length > 1 || wrongModel.length)
      violations.push(
        `${s.label}: model ${JSON.stringify(s.models)} (expected ${JSON.stringify(input.model)} throughout)`,
      );
  }
  for (const [id, owners] of idOwners)
    if (owners.length > 1) violations.push(`chunk id ${JSON.stringify(id)} appears in ${owners.join(' and ')}`);
  let mode: string;
  let compared = 0;
  if (input.deterministic) {
    mode = 'each answer equals its solo answer (profile declares determinism)';
    for (const s of streams) {
      if (s.soloText === undefined) continue;
      compared++;
      if (s.text !== s.soloText) {
        const at = [...s.text].findIndex((c, i) => c !== [...s.soloText!][i]);
        violations.push(
          `${s.label}: answer differs from its solo answer at character ${at < 0 ? Math.min(s.text.length, s.soloText.length) : at}: got ${JSON.stringify(s.text.slice(0, 80))}, alone ${JSON.stringify(s.soloText.slice(0, 80))}`,
        );
      }
    }
  } else if (input.soloEchoes) {
    mode = "each stream carries its own nonce and no other's";
    for (const s of streams) {
      if (!s.text.includes(s.nonce))
        violations.push(`${s.label}: its own nonce ${s.nonce} is missing from ${JSON.stringify(s.text.slice(0, 80))}`);
      for (const o of streams)
        if (o !== s && s.text.includes(o.nonce)) violations.push(`${s.label}: carries ${o.label}'s nonce ${o.nonce}`);
    }
  } else {
    mode = 'ids and models only';
  }
  const metrics = {
    streams: streams.map((s) => ({
      label: s.label,
      status: s.status,
      ids: s.ids.length,
      models: s.models,
      chars: s.text.length,
      equalsSolo: s.soloText === undefined ? undefined : s.text === s.soloText,
    })),
    mode,
  };
  if (violations.length) {
    return fail(
      {
        requirement:
          "Concurrent streams MUST never mix: each keeps its own id, model and text (cross-stream mixing sends one user's tokens to another).",
        expected: `${streams.length} streams, one distinct id each, model ${JSON.stringify(input.model)}, ${mode}`,
        actual: `${violations.length} violation(s): the streams mix`,
        violations,
      },
      metrics,
    );
  }
  if (input.deterministic && compared === 0)
    return inconclusive(
      'ids and models stayed per stream, but no stream had text alone and together to compare',
      metrics,
    );
  if (!input.deterministic && !input.soloEchoes)
    return inconclusive(
      `ids and models stayed per stream, but the model does not echo a nonce alone and the profile does not declare determinism, so the texts cannot be compared`,
      metrics,
    );
  return pass(`${streams.length} concurrent streams stayed apart: ${mode}`, metrics);
}
