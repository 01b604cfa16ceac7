// A CPU burner for measurements under load (scripts/simulate-false-failures.ts, scripts/burner-soak.ts): one child
// process spinning on one core, as a busy neighbour on a 2-core CI machine would. Bounded: it exits by itself after
// `maxMs` even if our process dies without stopping it.
import { type ChildProcess, spawn } from 'node:child_process';

export interface Burner {
  pid: number;
  stop(): Promise<void>;
}

export function startBurner(opts: { maxMs?: number } = {}): Burner {
  const maxMs = opts.maxMs ?? 30 * 60_000;
  const code = `const end = Date.now() + ${Math.floor(maxMs)}; let x = 0; while (Date.now() < end) { for (let i = 0; i < 1e6; i++) x = (x * 1103515245 + 12345) >>> 0; }`;
  const child: ChildProcess = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const kill = () => {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  };
  process.once('exit', kill);
  return {
    pid: child.pid ?? -1,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      kill();
      await exited;
      process.removeListener('exit', kill);
    },
  };
}
