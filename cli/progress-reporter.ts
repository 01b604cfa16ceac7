// The CLI's progress on the console, in place of Vitest's default reporter. On a terminal one live line, rewritten
// every second: `▶ 42/91 checks · parallel.speedup-2 0:04 · 0:38 elapsed · ETA ~0:30 · <the check's latest note>`
// (cli/progress.ts says how the ETA is estimated). Elsewhere (CI logs) plain lines, no escape codes: a heartbeat
// line after 10 s without output (`… still running capacity.sweep (0:35) · 62/91 checks · …`, every 60 s once a check
// has run two minutes). Both print a permanent line for every check that did not pass (skips are listed at the end)
// and every progress line a check reports (ctx.progress: a capacity level as it ends); with CONFORMANCE_VERBOSE=1
// every check and every line a check logs. Reads only what the checks attach to their tasks and the run's events.
import type { TestAnnotation, UserConsoleLog } from 'vitest';
import type { Reporter, TestCase, TestModule, TestSpecification } from 'vitest/node';
import { CHECKS_PER_FILE } from '../lib/check/family-order.ts';
import { moduleRank } from '../reporters/run-order.ts';
import type { ConformanceMeta } from '../suites/support/provided.d.ts';
import {
  clock,
  eta,
  type FileProgress,
  fileProgress,
  fitWidth,
  heartbeatEveryMs,
  heartbeatLine,
  liveLine,
  type Status,
} from './progress.ts';

type Mode = 'tty' | 'lines';

/** The annotation type a check's progress lines travel under (suites/support/register.ts, ctx.progress). */
const PROGRESS_ANNOTATION = 'progress';

const fileOf = (moduleId: string) => /suites[\\/]([a-z0-9-]+)\.test\.ts$/.exec(moduleId)?.[1];
const idOf = (tc: TestCase) => (tc.meta().conformance as ConformanceMeta | undefined)?.id ?? tc.name.split(' — ')[0]!;

export default class ProgressReporter implements Reporter {
  private readonly mode: Mode;
  private readonly verbose: boolean;
  private readonly started = Date.now();
  private readonly deadlineS = Number(process.env.CONFORMANCE_DEADLINE_S) || 0;
  private files: FileProgress[] = [];
  private done = 0;
  private firstReadyAt: number | undefined;
  private lastDoneAt: number | undefined;
  private current: { id: string; testId: string; since: number; note?: string } | undefined;
  private live = false;
  private lastPrintedAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  /** The last message printed: a setup error repeated by every check is printed once. */
  private lastMessage = '';

  constructor(options: { mode?: Mode; verbose?: boolean } = {}) {
    this.mode = options.mode ?? 'lines';
    this.verbose = options.verbose ?? process.env.CONFORMANCE_VERBOSE === '1';
  }

  /** The checks this run will run: every selected suite file's, as `npm run families` counted them. */
  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    // The capacity file is in the run only when its mode is (vitest.config.ts): present, it is a capacity run.
    const capacityRun = specifications.some((s) => fileOf(s.moduleId) === 'capacity');
    this.files = [...specifications]
      .sort((a, b) => moduleRank(a.moduleId) - moduleRank(b.moduleId))
      .flatMap((s) => {
        const file = fileOf(s.moduleId);
        return file ? [fileProgress(file, CHECKS_PER_FILE[file] ?? 0, capacityRun)] : [];
      });
  }

  /** Once a file is collected its own count replaces the estimate (a family changed since the count). */
  onTestModuleCollected(mod: TestModule): void {
    const f = this.files.find((x) => x.file === fileOf(mod.moduleId));
    if (f) f.planned = Math.max(f.done.length, [...mod.children.allTests()].length);
  }

  onTestCaseReady(testCase: TestCase): void {
    this.current = { id: idOf(testCase), testId: testCase.id, since: Date.now() };
    this.firstReadyAt ??= Date.now();
    this.timer ??= setInterval(() => this.tick(), 1_000).unref();
    this.render();
  }

  onTestCaseResult(testCase: TestCase): void {
    this.done++;
    this.lastDoneAt = Date.now();
    const f = this.files.find((x) => x.file === fileOf(testCase.module.moduleId));
    if (f) f.done.push(idOf(testCase));
    if (this.current?.testId === testCase.id) this.current = undefined;
    const meta = testCase.meta().conformance as ConformanceMeta | undefined;
    const outcome = meta?.outcome ?? testCase.result().state;
    // What stopped the run before its checks was printed once by global setup, as it happened.
    if (idOf(testCase) === 'setup.server-ready' && outcome === 'error') return;
    const shown = this.verbose || (outcome !== 'pass' && outcome !== 'skip');
    if (shown) {
      const first = (meta?.message ?? '').split('\n')[0]!.slice(0, 160);
      const said =
        outcome === 'pass' || !first ? '' : first === this.lastMessage ? ' (the same as above)' : `: ${first}`;
      if (outcome !== 'pass' && first) this.lastMessage = first;
      this.print(`${outcome.toUpperCase().padEnd(12)} ${idOf(testCase)}${said} (${clock(Date.now() - this.started)})`);
    }
    this.render();
  }

  /** A check's progress line (ctx.progress): printed at once, whatever the mode. */
  onTestCaseAnnotate(testCase: TestCase, annotation: TestAnnotation): void {
    if (annotation.type !== PROGRESS_ANNOTATION) return;
    this.print(`  ▸ ${annotation.message}`);
    this.render();
  }

  /** What a check logs (ctx.log): the live line's note; with --verbose a line of its own. */
  onUserConsoleLog(log: UserConsoleLog): void {
    const lines = log.content.split('\n').filter((l) => l.trim());
    if (!lines.length) return;
    if (this.verbose) for (const l of lines) this.print(`  ${l}`);
    if (this.current && log.taskId === this.current.testId)
      this.current.note = lines.at(-1)!.replace(/^\[[a-z0-9.-]+\] /, '');
    this.render();
  }

  onTestRunEnd(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clearLive();
  }

  private status(now = Date.now()): Status {
    const first = this.firstReadyAt ?? now;
    return {
      done: this.done,
      planned: Math.max(
        this.done,
        this.files.reduce((s, f) => s + f.planned, 0),
      ),
      ...(this.current
        ? { current: { id: this.current.id, ms: now - this.current.since, note: this.current.note } }
        : {}),
      elapsedMs: now - this.started,
      eta:
        this.lastDoneAt === undefined
          ? undefined
          : eta(this.files, {
              atLastDoneMs: this.lastDoneAt - first,
              sinceLastDoneMs: now - this.lastDoneAt,
              ...(this.current ? { current: this.current.id } : {}),
            }),
      ...(this.deadlineS ? { deadlineS: this.deadlineS } : {}),
    };
  }

  /** Every second: the live line moves on a terminal; elsewhere a heartbeat line when nothing was printed for a while. */
  private tick(): void {
    if (this.mode === 'tty') {
      this.render();
      return;
    }
    const now = Date.now();
    const checkMs = this.current ? now - this.current.since : 0;
    if (now - this.lastPrintedAt >= heartbeatEveryMs(checkMs)) this.print(heartbeatLine(this.status(now)));
  }

  private render(): void {
    if (this.mode !== 'tty' || this.firstReadyAt === undefined) return;
    const cols = process.stdout.columns || 120;
    process.stdout.write(`\r\x1b[2K${fitWidth(liveLine(this.status()), cols)}`);
    this.live = true;
  }

  private clearLive(): void {
    if (this.live) process.stdout.write('\r\x1b[2K');
    this.live = false;
  }

  private print(line: string): void {
    this.clearLive();
    process.stdout.write(`${line}\n`);
    this.lastPrintedAt = Date.now();
  }
}
