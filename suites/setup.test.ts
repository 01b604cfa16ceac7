// setup.server-ready: the first result of every project says what answered, or why nothing could be checked.
import { test, inject, describe } from 'vitest';

describe(inject('profile').id, () => {
  test('setup.server-ready — the server was started or reached and answered its readiness probe', (t) => {
    const profile = inject('profile');
    const server = inject('server');
    const setupError = inject('setupError');
    t.task.meta.conformance = {
      id: 'setup.server-ready',
      title: 'server reachable and ready',
      family: 'setup',
      level: 'MUST',
      outcome: setupError ? 'error' : 'pass',
      message: setupError
        ? `setup error: ${setupError}`
        : `${server.identity.name ?? 'unknown server'} ${server.identity.version ?? ''} (${server.identity.source}); context window ${server.contextWindow?.value ?? 'unknown'} (${server.contextWindow?.source ?? 'not discovered'})`,
      rationale: 'Nothing can be checked on a server that is not there; this is a setup error, never a check failure.',
      reference: 'design.md "Grading": error',
      profileId: profile.id,
      metrics: { identity: server.identity, contextWindow: server.contextWindow, trainedContext: server.trainedContext },
    };
    if (setupError) throw new Error(`setup error: ${setupError}`);
  });
});
