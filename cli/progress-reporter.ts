// The CLI's progress on the console, in place of Vitest's default reporter: on a TTY one live line (family, check,
// how many done, elapsed, the run deadline) with a permanent line for every check that did not pass; elsewhere (CI
// logs) one plain line per check. Reads only what each check attached to its task.
import type { Reporter, TestCase } from 'vitest/node';
import type { ConformanceMeta } from '../suites/support/provided.d.ts';

type Mode = 'tty' | 'lines';

const clock = (ms: number) => {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};

export default class ProgressReporter implements Reporter {
  private readonly mode: Mode;
  private readonly started = Date.now();
  private done = 0;
  private live = false;
  /** The last message printed: a setup error repeated by every check is printed once. */
  private lastMessage = '';
  private readonly deadlineS = Number(process.env.CONFORMANCE_DEADLINE_S) || 0;

  constructor(options: { mode?: Mode } = {}) {
    this.mode = options.mode ?? 'lines';
  }

  private write(line: string): void {
    if (this.live) process.stdout.write('\r\x1b[2K');
    this.live = false;
    process.stdout.write(`${line}\n`);
  }

  private status(text: string): void {
    if (this.mode !== 'tty') return;
    const cols = process.stdout.columns || 120;
    process.stdout.write(`\r\x1b[2K${text.slice(0, cols - 1)}`);
    this.live = true;
  }

  private tail(): string {
    return `${this.done} done · ${clock(Date.now() - this.started)} elapsed${this.deadlineS ? ` · deadline ${clock(this.deadlineS * 1000)} from ready` : ''}`;
  }

  onTestCaseReady(testCase: TestCase): void {
    const id = testCase.name.split(' — ')[0]!;
    this.status(`▶ ${id.split('.')[0]} · ${id} · ${this.tail()}`);
  }

  onTestCaseResult(testCase: TestCase): void {
    this.done++;
    const meta = testCase.meta().conformance as ConformanceMeta | undefined;
    const id = meta?.id ?? testCase.name.split(' — ')[0]!;
    const outcome = meta?.outcome ?? testCase.result().state;
    const first = (meta?.message ?? '').split('\n')[0]!.slice(0, 160);
    // What stopped the run before its checks was printed once by global setup, as it happened.
    if (id === 'setup.server-ready' && outcome === 'error') return;
    if (this.mode === 'lines' || outcome !== 'pass') {
      const said =
        outcome === 'pass' || !first ? '' : first === this.lastMessage ? ' (the same as above)' : `: ${first}`;
      if (outcome !== 'pass' && first) this.lastMessage = first;
      this.write(`${outcome.toUpperCase().padEnd(12)} ${id}${said} (${clock(Date.now() - this.started)})`);
    }
  }

  onTestRunEnd(): void {
    if (this.live) process.stdout.write('\r\x1b[2K');
    this.live = false;
  }
}
