// Who used the machine's CPUs while a timing trend was measured: the server the suite started (its process tree),
// our own client, and everything else ("other": neighbours, other VMs' steal). On a shared machine a neighbour that
// starts mid-run slows a CPU-bound server exactly like a decay would; these figures let the cycles verdicts tell the
// two apart (lib/grading/cycles.ts `contention`). Linux only (/proc); elsewhere every reading is undefined.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

interface CpuSnapshot {
  atMs: number;
  /** Machine-wide jiffies (all CPUs): busy (user, nice, system, irq, softirq, steal) and total (busy + idle + iowait). */
  busy: number;
  total: number;
  /** CPUs the machine counters cover (the `cpuN` lines of /proc/stat; affinity may let us see fewer). */
  cpus: number;
  /** CPU jiffies of the server's process tree (user + system), when its pid is known and alive. */
  server?: number;
  /** Our own process's CPU time (µs, user + system). */
  clientUs: number;
}

/** CPU use over an interval, in cores (1 = one CPU busy for the whole interval). */
export interface CpuUse {
  cores: number;
  /** Everything that is neither the server nor our client. */
  otherCores: number;
  serverCores?: number;
  clientCores: number;
}

function machineJiffies(): { busy: number; total: number; cpus: number } | undefined {
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n');
    const line = lines[0]!;
    const cpus = lines.filter((l) => /^cpu\d+ /.test(l)).length || availableParallelism();
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    if (f[0] === undefined || f.length < 8 || f.some((x) => !Number.isFinite(x))) return undefined;
    // user nice system idle iowait irq softirq steal (guest time is already inside user)
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait, cpus };
  } catch {
    return undefined;
  }
}

/** utime + stime of one process (jiffies), or undefined when it is gone. */
function processJiffies(pid: number): number | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : undefined;
  } catch {
    return undefined;
  }
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** CPU jiffies of a process and its live descendants (a wrapper such as `npx` or a shell keeps the work in a child). */
export function processTreeJiffies(rootPid: number): number | undefined {
  const own = processJiffies(rootPid);
  if (own === undefined) return undefined;
  let total = own;
  const stack = childPids(rootPid);
  for (let guard = 0; stack.length && guard < 1_000; guard++) {
    const p = stack.pop()!;
    total += processJiffies(p) ?? 0;
    stack.push(...childPids(p));
  }
  return total;
}

/** A reading now, or undefined where /proc/stat is not there (macOS, Windows). */
export function cpuSnapshot(serverPid?: number): CpuSnapshot | undefined {
  const m = machineJiffies();
  if (!m) return undefined;
  const u = process.cpuUsage();
  return {
    atMs: performance.now(),
    ...m,
    server: serverPid === undefined ? undefined : processTreeJiffies(serverPid),
    clientUs: u.user + u.system,
  };
}

/**
 * CPU use between two readings. Jiffies are converted with the rate the machine counters themselves show
 * (total jiffies / (cores × seconds)), so no clock-tick constant is assumed.
 */
export function cpuUse(a: CpuSnapshot, b: CpuSnapshot, cores = b.cpus): CpuUse | undefined {
  const seconds = (b.atMs - a.atMs) / 1000;
  const dTotal = b.total - a.total;
  if (!(seconds > 0.05) || !(dTotal > 0)) return undefined;
  const perCore = dTotal / cores; // jiffies of one CPU over the interval
  const busyCores = (b.busy - a.busy) / perCore;
  const serverCores =
    a.server !== undefined && b.server !== undefined ? Math.max(0, (b.server - a.server) / perCore) : undefined;
  const clientCores = Math.max(0, (b.clientUs - a.clientUs) / 1e6 / seconds);
  const otherCores = Math.max(0, busyCores - (serverCores ?? 0) - clientCores);
  return { cores, otherCores, serverCores, clientCores };
}
