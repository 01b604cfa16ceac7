// The memory of a Vitest run (lib/model/check.ts RunMemory): each worker has its own local slices; the shared slices
// live in one JSON document, the run's state file in its state directory, read and written whole (checks run one at a
// time, so two workers never write it at once).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { RunMemory } from '../model/check.ts';
import { freshMemory } from '../model/memory.ts';

export function runMemory(stateFile: string): RunMemory {
  return freshMemory(
    {
      read() {
        if (!existsSync(stateFile)) return {};
        try {
          return JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, unknown>;
        } catch {
          return {}; // a torn file is no state: never a crash of the check that reads it
        }
      },
      write(doc) {
        const tmp = `${stateFile}.${process.pid}.tmp`;
        writeFileSync(tmp, JSON.stringify(doc));
        renameSync(tmp, stateFile);
      },
    },
    { ofRun: true },
  );
}
