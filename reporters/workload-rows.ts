// Figures and workloads: the workload figures each check reports (lib/measure/workload.ts) as table rows, and the
// streams whose delivery was phantom (lib/grading/phantom.ts), recomputed from the checks' evidence.

import { causeLabel, maxPlausibleTps, phantomFromEvidence, physicalFlag } from '../lib/grading/phantom.ts';
import { isJsonObject } from '../lib/json.ts';
import type { WorkloadFigures } from '../lib/measure/workload.ts';
import type { Outcome } from '../lib/model/types.ts';
import type { Column } from './columns.ts';
import { cellNum } from './report-text.ts';
import type { CheckResult } from './results-types.ts';

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** A figure stored either as a number or as an object with an estimate (e.g. speedup {estimate, low, high}). */
export function figure(v: unknown): number | undefined {
  if (typeof v === 'number') return num(v);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return num(o.estimate) ?? num(o.p50) ?? num(o.median) ?? num(o.value);
  }
  return undefined;
}

/** One workload's figures as a table row: lib/measure/workload.ts figures (requests optional), plus which check and its outcome. */
interface WorkloadRow extends Omit<WorkloadFigures, 'samples' | 'requests'> {
  check: string;
  outcome: Outcome;
  requests?: number;
  /** Set when gen_tps of this workload is phantom (recomputed from the check's evidence and the profile's hardware). */
  phantom?: { label: string; detail: string };
}

const FIGURE_KEYS = ['wall_tps_p50', 'ttft_p50_ms', 'ttft_p50', 'gen_tps_p50', 'speedup'];

/** A lib/measure/workload.ts WorkloadFigures object (not just any `workload` descriptor a check keeps, e.g. {cycles, tokens}). */
function isWorkloadFigures(w: unknown): w is Record<string, unknown> {
  return isJsonObject(w) && FIGURE_KEYS.some((k) => figure(w[k]) !== undefined);
}

function workloadsOf(c: CheckResult): Record<string, unknown>[] {
  const m = c.metrics;
  if (!m) return [];
  if (Array.isArray(m.workloads) && m.workloads.some(isWorkloadFigures)) return m.workloads.filter(isWorkloadFigures);
  if (isWorkloadFigures(m.workload)) return [m.workload];
  // Checks that did not adopt lib/measure/workload.ts: their top-level seed figures make one row. A bare ratio (an
  // older parallel.speedup-2's speedup) is no workload: its row was the check's id and dashes around "1.86x".
  const ttft = figure(m.ttft_p50_ms) ?? figure(m.ttft_p50);
  const wall = figure(m.wall_tps_p50);
  if (wall === undefined && ttft === undefined) return [];
  const sp = figure(m.speedup) ?? figure(m.speedup_p50);
  return [
    {
      name: "the check's own figures",
      wall_tps_p50: wall,
      ttft_p50_ms: ttft,
      gen_tps_p50: figure(m.gen_tps_p50),
      speedup: sp,
    },
  ];
}

interface PhantomCheck {
  check: string;
  outcome: Outcome;
  label: string;
  detail: string;
}

/** Checks whose recorded streams (evidence) show phantom delivery, whether or not they report a workload. */
export function phantomChecks(col: Column): PhantomCheck[] {
  const plausible = maxPlausibleTps((col.header.profile as { hardware?: unknown }).hardware);
  const out: PhantomCheck[] = [];
  for (const c of col.checks) {
    const f = phantomFromEvidence(c.evidence, c.loopDelay?.maxMs, {}, plausible);
    if (f) out.push({ check: c.id, outcome: c.outcome, label: causeLabel(f.kinds), detail: f.detail });
  }
  return out;
}

/** Checks that share one recording (same causes and detail) are listed together. */
export function groupPhantoms(ph: readonly PhantomCheck[]): { checks: string[]; label: string; detail: string }[] {
  const groups: { checks: string[]; label: string; detail: string }[] = [];
  for (const p of ph) {
    const g = groups.find((x) => x.label === p.label && x.detail === p.detail);
    if (g) g.checks.push(p.check);
    else groups.push({ checks: [p.check], label: p.label, detail: p.detail });
  }
  return groups;
}

export function workloadRows(col: Column): WorkloadRow[] {
  const hw = (col.header.profile as { hardware?: unknown }).hardware;
  const plausible = maxPlausibleTps(hw);
  const rows: WorkloadRow[] = [];
  for (const c of col.checks) {
    const ws = workloadsOf(c);
    if (ws.length === 0) continue;
    const delivery = phantomFromEvidence(c.evidence, c.loopDelay?.maxMs, {}, plausible);
    for (const w of ws) {
      const gen = figure(w.gen_tps_p50);
      const physics = physicalFlag(gen, hw);
      const flags = [delivery, physics].filter((f) => f !== undefined);
      rows.push({
        check: c.id,
        outcome: c.outcome,
        name: typeof w.name === 'string' ? w.name : c.id,
        requests: num(w.requests),
        concurrency: num(w.concurrency),
        wall_tps_p50: figure(w.wall_tps_p50),
        ttft_p50_ms: figure(w.ttft_p50_ms) ?? figure(w.ttft_p50),
        gen_tps_p50: gen,
        speedup: figure(w.speedup),
        tokens_usage: num(w.tokens_usage),
        tokens_counted: num(w.tokens_counted),
        phantom: flags.length
          ? { label: causeLabel(flags.flatMap((f) => f!.kinds)), detail: flags.map((f) => f!.detail).join('; ') }
          : undefined,
      });
    }
  }
  return rows;
}

export function genTpsCell(r: WorkloadRow): string {
  const gen = r.gen_tps_p50 === undefined && r.phantom ? 'n/a' : cellNum(r.gen_tps_p50);
  return r.phantom ? `${gen} PHANTOM (${r.phantom.label})` : gen;
}

export function tokensCell(r: WorkloadRow): string {
  if (r.tokens_usage === undefined && r.tokens_counted === undefined) return '-';
  return `${r.tokens_usage ?? 'n/a'} / ${r.tokens_counted ?? 'n/a'}`;
}
