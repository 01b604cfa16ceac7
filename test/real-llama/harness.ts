// Runs the whole catalogue against a real llama-server (lib/server/llama-server.ts) in one configuration and asserts each
// check's graded outcome against test/real-llama/expectations.ts. Registered by test/real-llama/*.test.ts.

import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  B4747_KNOWN_ISSUES,
  LLAMA_CONFIGS,
  type LlamaConfig,
  type LlamaConfigName,
} from '../../fixtures/llama-configs.ts';
import { grade, skipReason } from '../../lib/check/check.ts';
import { loadServers, ROOT } from '../../lib/config/profile.ts';
import { settingsFromEnv } from '../../lib/config/settings.ts';
import type { CheckDef } from '../../lib/model/check.ts';
import { freshMemory } from '../../lib/model/memory.ts';
import type { Outcome, Profile, ServerInfo } from '../../lib/model/types.ts';
import { describeDiscovery, discoverServer } from '../../lib/server/discovery.ts';
import {
  findLlamaBundle,
  LLAMA_DIR_ENV,
  type LlamaBundle,
  type LlamaServer,
  llamaRunnable,
  llamaServerProfile,
  makeLlamaModel,
  startLlamaServer,
} from '../../lib/server/llama-server.ts';
import { measureBaseline, type SentinelContext } from '../../lib/server/sentinel.ts';
import { FAMILY_ORDER } from '../../reporters/report-data.ts';
import { reportsRoot } from '../../reporters/results.ts';
import { families } from '../../suites/catalogue.ts';
import { runWithSentinel } from '../support/sentinel-run.ts';
import { type Expectation, expectationFor } from './expectations.ts';
import { plainSpeedup, speedupExpectation } from './plain-speedup.ts';

/**
 * Checks in run order (the order a project runs its family files in). Capacity is a run mode that is asked for
 * (--capacity): a run that does not ask has none of its checks; its sweep against llama-server was run by hand
 * (docs/capacity.md), a minute and more of saturating load being past CI's budget.
 */
export function orderedChecks(): CheckDef[] {
  const rank = (f: string) => (FAMILY_ORDER.indexOf(f) === -1 ? FAMILY_ORDER.length : FAMILY_ORDER.indexOf(f));
  return Object.entries(families)
    .filter(([f]) => f !== 'capacity')
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .flatMap(([, m]) => m.checks);
}

/** `missing`: no bundle at all (a failure where one is required), as opposed to a binary that cannot run here. */
export type Availability =
  | { bundle: LlamaBundle; version: string }
  | { bundle?: undefined; skip: string; missing: boolean };

/**
 * Environment variable that makes a missing bundle a failure (our CI sets it). Without it a missing bundle skips,
 * also under CI=true, so a fork's CI without the bundle stays green.
 */
export const REQUIRE_LLAMA_ENV = 'CONFORMANCE_REQUIRE_LLAMA';
export function llamaRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[REQUIRE_LLAMA_ENV] === '1' || env[REQUIRE_LLAMA_ENV] === 'true';
}

/** Is there a bundle, and can its binary run here? Either answer no is a skip naming why. */
export async function llamaAvailability(env: NodeJS.ProcessEnv = process.env): Promise<Availability> {
  const { bundle, searched } = findLlamaBundle(settingsFromEnv(env).llamaDir);
  if (!bundle)
    return {
      skip: `no llama.cpp bundle (bin/llama-server, vocab/, make-model.mjs) in ${searched.join(' or ')}; set ${LLAMA_DIR_ENV}`,
      missing: true,
    };
  const r = await llamaRunnable(bundle);
  if (!r.ok) return { skip: `${bundle.binary} cannot run here: ${r.reason}`, missing: false };
  return { bundle, version: r.version };
}

/**
 * Configurations to run: CONFORMANCE_LLAMA_CONFIGS=tiny-4,bandwidth-4 picks some, `all` runs the three. The default
 * (the README's command, CI) runs all three: about 6 minutes here, of the project's 10.
 */
export const DEFAULT_LLAMA_CONFIGS: readonly LlamaConfigName[] = ['tiny-4', 'tiny-1', 'bandwidth-4'];
export function selectedConfigs(env: NodeJS.ProcessEnv = process.env): LlamaConfig[] {
  const raw = (env.CONFORMANCE_LLAMA_CONFIGS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const names = raw.includes('all') ? Object.keys(LLAMA_CONFIGS) : raw;
  for (const n of names)
    if (!(n in LLAMA_CONFIGS))
      throw new Error(
        `CONFORMANCE_LLAMA_CONFIGS: unknown configuration "${n}" (known: ${Object.keys(LLAMA_CONFIGS).join(', ')}, all)`,
      );
  return (names.length ? names : DEFAULT_LLAMA_CONFIGS).map((n) => LLAMA_CONFIGS[n as LlamaConfigName]);
}

interface Row {
  id: string;
  level: string;
  outcome: Outcome;
  expected: Outcome[];
  /** The verdict was a borderline warn (accepted where the expectation says borderlineWarn). */
  borderline?: boolean;
  /** The outcome is one the expectation accepts. */
  asExpected: boolean;
  ms: number;
  message: string;
  metrics?: Record<string, unknown>;
  /** The verdict's evidence, kept only where the outcome was not expected (what the wire showed, to decide who is wrong). */
  evidence?: unknown[];
}

/** The figures a reader wants beside the verdicts: single and parallel decode rates, TTFT, prefill. */
function speedFigures(rows: Row[]): Record<string, unknown> {
  const m = (id: string) => rows.find((r) => r.id === id)?.metrics ?? {};
  const sp = m('parallel.speedup-2').speedup as Record<string, number> | undefined;
  const curve = m('parallel.scaling').curve as
    | Array<{ concurrency: number; aggregateTps?: number; ttftP50Ms?: number }>
    | undefined;
  return {
    singleTps: sp?.singleTps,
    aggregateTps2: sp?.aggregateTps,
    speedup2: sp ? { estimate: sp.estimate, low: sp.low, high: sp.high } : undefined,
    scaling: curve?.map((c) => ({ c: c.concurrency, tps: c.aggregateTps, ttftP50Ms: c.ttftP50Ms })),
    ttftMs: m('stream.ttft-before-end').ttftMs,
    prefill: m('context.prefill-scaling').points ?? m('context.prefill-scaling').samples,
  };
}

function printTable(cfg: LlamaConfig, info: ServerInfo | undefined, rows: Row[], totalMs: number): string {
  const lines = [
    `real llama-server ${cfg.name} (${cfg.purpose}): ${rows.length} checks in ${(totalMs / 1000).toFixed(0)} s`,
    info ? `  ${describeDiscovery(info)}` : '',
    ...rows.map(
      (r) =>
        `  ${r.outcome.toUpperCase().padEnd(13)} ${r.level.padEnd(6)} ${r.id.padEnd(30)} ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.asExpected ? '' : `UNEXPECTED (expected ${r.expected.join('|')}) `}${r.message.split('\n')[0]!.slice(0, 140)}`,
    ),
  ];
  return lines.filter(Boolean).join('\n');
}

const accepted = (exp: Expectation, outcome: Outcome, borderline: boolean | undefined) =>
  exp.outcomes.includes(outcome) || (outcome === 'warn' && exp.borderlineWarn === true && borderline === true);
const expectedText = (exp: Expectation): Outcome[] => [
  ...exp.outcomes,
  ...(exp.borderlineWarn ? ['warn' as const] : []),
];

/** Register one configuration: start its server before the checks, stop it after, one test per check. */
export function describeLlamaConfig(cfg: LlamaConfig, bundle: LlamaBundle): void {
  const base = loadServers().find((p) => p.id === 'llama.cpp');
  if (!base) throw new Error('servers.json has no "llama.cpp" profile');
  describe(`llama-server ${cfg.name}`, () => {
    let dir: string | undefined;
    let running: LlamaServer | undefined;
    let profile: Profile | undefined;
    let info: ServerInfo | undefined;
    // The health sentinel, as in a conformance run: a correct llama-server must never trip it (health.sentinel passes).
    let sentinel: SentinelContext | undefined;
    const rows: Row[] = [];
    const runId = randomBytes(4).toString('hex');
    let t0 = 0;

    beforeAll(async () => {
      t0 = performance.now();
      dir = mkdtempSync(join(tmpdir(), `conformance-llama-${cfg.name}-`));
      const model = await makeLlamaModel(bundle, cfg.recipe, dir);
      const options = { bundle, model, ...cfg.server };
      running = await startLlamaServer(options);
      const knownIssues = [...(base.knownIssues ?? []), ...B4747_KNOWN_ISSUES];
      profile = { ...llamaServerProfile(base, options, { ...cfg.profile, knownIssues }), baseUrl: running.baseUrl };
      info = await discoverServer(profile, running.baseUrl, {}, running.server.pid);
      // A run's memory: root causes, deadline evidence and the sentinel's state carry from check to check, as in a run.
      sentinel = { profile, server: info, memory: freshMemory(undefined, { ofRun: true }), runId };
      await measureBaseline(sentinel);
      console.log(
        `[real-llama ${cfg.name}] ${running.argv.join(' ')}\n[real-llama ${cfg.name}] ${describeDiscovery(info)}`,
      );
    }, 180_000);

    afterAll(async () => {
      await running?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
      const out = join(reportsRoot(ROOT), 'real-llama');
      mkdirSync(out, { recursive: true });
      const totalMs = performance.now() - t0;
      writeFileSync(
        join(out, `${cfg.name}.json`),
        JSON.stringify(
          { config: cfg, argv: running?.argv, server: info, totalMs, speed: speedFigures(rows), checks: rows },
          null,
          2,
        ),
      );
      console.log(printTable(cfg, info, rows, totalMs));
    });

    test('discovery: model "default" resolves to the one listed model; window per slot and slots from /props; trained context kept apart', () => {
      expect(info, 'setup failed').toBeDefined();
      expect(info!.model).toEqual({
        value: cfg.server.alias,
        source: expect.stringContaining('the only model listed'),
      });
      expect(info!.contextWindow?.value).toBe(cfg.server.ctxPerSlot);
      expect(info!.contextWindow?.source).toMatch(/n_ctx \(per slot\)/);
      expect(info!.slots).toEqual({ value: cfg.server.slots, source: 'GET /props total_slots' });
      expect(info!.trainedContext?.source).toMatch(/n_ctx_train \(trained\)/);
      expect(info!.trainedContext?.value).not.toBe(info!.contextWindow?.value);
      expect(info!.discovery?.disagreements).toEqual([]);
    });

    test('discovery told nothing (auto): identified from /props, owned_by and the Server header together; the window is what one slot holds (-c / -np)', async () => {
      expect(profile && running, 'llama-server did not start').toBeTruthy();
      const told = { ...profile!, slots: undefined, context: { discovery: 'auto' as const } };
      const auto = await discoverServer(told, running!.baseUrl, {});
      expect(auto.discovery?.adapter).toBe('llama.cpp, then generic');
      expect(auto.identity.signals?.map((s) => s.source)).toEqual(
        expect.arrayContaining(['GET /props build_info', 'GET /v1/models owned_by', 'Server header']),
      );
      expect(auto.contextWindow).toEqual({ value: cfg.server.ctxPerSlot, source: expect.stringMatching(/per slot/) });
      expect(auto.slots?.value).toBe(cfg.server.slots);
      expect(auto.discovery?.conflicts).toEqual([]);
    });

    for (const check of orderedChecks().filter((c) => !cfg.families || cfg.families.includes(c.id.split('.')[0]!))) {
      let exp = expectationFor(check.id, cfg.name);
      test(check.id === 'parallel.speedup-2' && cfg.server.slots > 1
        ? `${check.id} agrees with a plain fetch client's speedup measured just before`
        : `${check.id} is ${exp.outcomes.join(' or ')}${exp.borderlineWarn ? ' or a borderline warn' : ''}${exp.why ? ` (${exp.why.slice(0, 80)})` : ''}`, {
        timeout: (check.timeoutMs ?? 60_000) + 30_000,
      }, async () => {
        expect(profile && info && running, 'llama-server did not start (see the beforeAll error)').toBeTruthy();
        const exited = running!.server.exited();
        expect(
          exited,
          `llama-server exited (${JSON.stringify(exited)}) before ${check.id}:\n${running!.server.lastLines(20).join('\n')}`,
        ).toBeUndefined();
        const started = performance.now();
        let outcome: Outcome;
        let message: string;
        let metrics: Record<string, unknown> | undefined;
        let evidence: unknown[] | undefined;
        let borderline: boolean | undefined;
        const skipped = skipReason(check, profile!, info!, 'quick');
        // Batching on this machine today, measured by a second instrument: what the speedup verdict must agree with.
        const plainNow = () => plainSpeedup(running!.baseUrl, info!.model?.value ?? profile!.model);
        const secondInstrument = check.id === 'parallel.speedup-2' && !skipped && cfg.server.slots > 1;
        const before = secondInstrument ? await plainNow() : undefined;
        if (before) exp = speedupExpectation(before);
        if (skipped) {
          outcome = 'skip';
          message = skipped;
        } else {
          try {
            const r = await runWithSentinel(sentinel!, check, {
              profile: profile!,
              server: info!,
              tier: 'quick',
              strict: false,
              runId,
              log: () => undefined,
            });
            const g = grade(check, r.verdict, profile!, false);
            outcome = g.outcome;
            message = g.message;
            metrics = r.verdict.metrics;
            borderline = outcome === 'warn' && r.verdict.borderline === true ? true : undefined;
            // Disagreement: measure again right after, so a speed that moved during the check is seen by both.
            if (before && !accepted(exp, outcome, borderline)) exp = speedupExpectation(before, await plainNow());
            if (!accepted(exp, outcome, borderline)) evidence = r.verdict.evidence?.slice(0, 6);
          } catch (e) {
            outcome = 'error';
            message = `harness error: ${(e as Error).stack ?? e}`;
          }
        }
        rows.push({
          id: check.id,
          level: check.level,
          outcome,
          expected: expectedText(exp),
          borderline,
          asExpected: accepted(exp, outcome, borderline),
          ms: performance.now() - started,
          message,
          metrics,
          evidence,
        });
        expect(
          accepted(exp, outcome, borderline),
          `${check.id} on llama-server ${cfg.name} graded ${borderline ? 'a borderline ' : ''}${outcome}; expected ${expectedText(exp).join(' or ')}${exp.why ? ` (${exp.why})` : ''}.\n${message}`,
        ).toBe(true);
      });
    }
  });
}
