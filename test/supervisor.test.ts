// The supervisor names what the process did. A crashing server closes its listening socket a moment before its exit
// event arrives; on a loaded machine the probe can land in that moment, and the process must still read as exited.
import { expect, test } from 'vitest';
import { EXIT_GRACE_MS, MAX_RESTARTS, requestRestart, startSupervisor } from '../lib/server/supervisor.ts';

function supervisorWith(stateAt: () => string) {
  return startSupervisor({
    processState: stateAt,
    restart: async () => {
      throw new Error('no start');
    },
    onRestart: () => undefined,
  });
}

test('a process that finishes exiting within the grace reads as exited, not alive', async () => {
  const exitAt = Date.now() + 600;
  const sup = await supervisorWith(() =>
    Date.now() >= exitAt ? 'exited (code 1)' : 'alive (pid 1) but not answering',
  );
  try {
    const answer = await requestRestart(sup.url, 'errors.no-server-error', 'POST /v1/chat/completions', 10_000);
    expect(answer.process).toBe('exited (code 1)');
  } finally {
    await sup.close();
  }
});

test('a process still alive after the grace reads as alive, and the wait is bounded', async () => {
  let state = 'exited (code 1)'; // the bounded restarts are spent on quick exits first
  const sup = await supervisorWith(() => state);
  try {
    for (let i = 0; i < MAX_RESTARTS; i++) await requestRestart(sup.url, 'x', 'y', 10_000);
    state = 'alive (pid 1) but not answering';
    const t0 = Date.now();
    const answer = await requestRestart(sup.url, 'errors.no-server-error', 'POST /v1/chat/completions', 10_000);
    expect(answer.process).toBe('alive (pid 1) but not answering');
    expect(answer.reason).toMatch(/already restarted 3 times/);
    expect(Date.now() - t0).toBeLessThan(EXIT_GRACE_MS + 3_000);
  } finally {
    await sup.close();
  }
});
