// A fresh run memory (lib/model/check.ts RunMemory) held in this process alone: what a self-test, a script or a load
// worker runs with. A Vitest run's workers share theirs through the run's state file (lib/run/memory.ts).
import type { LocalSlice, RunMemory, SharedSlice, StateSlot } from './check.ts';

/** The state every slice of a memory is read from and written to, whole. */
interface StateDocument {
  read(): Record<string, unknown>;
  write(doc: Record<string, unknown>): void;
}

export function freshMemory(doc?: StateDocument, o: { ofRun?: boolean } = {}): RunMemory {
  const locals = new Map<string, unknown>();
  let held: Record<string, unknown> = {};
  const state: StateDocument = doc ?? {
    read: () => held,
    write: (d) => {
      held = d;
    },
  };
  return {
    ofRun: o.ofRun ?? false,
    local<T>(slice: LocalSlice<T>): T {
      if (!locals.has(slice.name)) locals.set(slice.name, slice.create());
      return locals.get(slice.name) as T;
    },
    shared<T>(slice: SharedSlice<T>): StateSlot<T> {
      const valueIn = (d: Record<string, unknown>) =>
        (d[slice.name] as T | undefined) ?? structuredClone(slice.initial);
      return {
        read: () => valueIn(state.read()),
        update(f) {
          const d = state.read();
          const next = f(valueIn(d));
          state.write({ ...d, [slice.name]: next });
          return next;
        },
      };
    },
  };
}
