// Start N requests together, as the seed harness did with asyncio.Event: create every task first, let them all
// wait on one gate, sleep a little so every task is parked, then open the gate. After the gate opens, each task's
// continuation runs in the same microtask drain, so all N are started within one event-loop tick.
// Timing of the spread is measured (startTimes), never asserted here.

interface BarrierOptions {
  /** How long the tasks wait parked before the gate opens (ms). */
  armDelayMs?: number;
  /** Called just before the gate opens (test hook: nothing may have started yet). */
  onArmed?: () => void;
}

interface BarrierResult<T> {
  /** One entry per task, in task order; rejections are collected, never thrown. */
  results: PromiseSettledResult<T>[];
  /** performance.now() when the gate opened. */
  releasedAt: number;
  /** performance.now() when each task was started after the gate, in task order. */
  startTimes: number[];
  /** Task indices in the order they were started. */
  order: number[];
}

export async function releaseTogether<T>(
  tasks: ReadonlyArray<() => Promise<T>>,
  opts: BarrierOptions = {},
): Promise<BarrierResult<T>> {
  const armDelayMs = opts.armDelayMs ?? 50;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const startTimes = new Array<number>(tasks.length).fill(Number.NaN);
  const order: number[] = [];
  const running = tasks.map(async (task, i) => {
    await gate;
    startTimes[i] = performance.now();
    order.push(i);
    return task(); // a synchronous throw becomes this promise's rejection
  });
  await new Promise<void>((resolve) => setTimeout(resolve, armDelayMs));
  opts.onArmed?.();
  const releasedAt = performance.now();
  open();
  const results = await Promise.allSettled(running);
  return { results, releasedAt, startTimes, order };
}
