// setup.server-ready: the first result of every project says what answered, or why nothing could be checked.
import { describe, inject, test } from 'vitest';
import { describeDiscovery } from '../lib/server/discovery.ts';
import { SETUP_CHECK } from './support/setup-check.ts';

describe(inject('run').profile.id, () => {
  test('setup.server-ready — the server was started or reached and answered its readiness probe', (t) => {
    const { profile, server, setupError } = inject('run');
    const disagreements = server.discovery?.disagreements ?? [];
    t.task.meta.conformance = {
      id: SETUP_CHECK.id,
      title: SETUP_CHECK.title,
      family: 'setup',
      level: SETUP_CHECK.level,
      // A declared value the server contradicts is a warning (docs/grading.md "Declared and discovered capabilities").
      outcome: setupError ? 'error' : disagreements.length ? 'warn' : 'pass',
      // The setup failure as global setup printed it (SERVER NEVER READY / CONFIGURATION ERROR / SETUP ERROR: …).
      message: setupError
        ? setupError
        : `${server.identity.name ?? 'unknown server'} ${server.identity.version ?? ''} (${server.identity.source}); ${describeDiscovery(server)}` +
          (disagreements.length ? `\nDeclared and reported values disagree: ${disagreements.join('; ')}` : '') +
          (server.discovery?.conflicts?.length
            ? `\nThe server's own figures disagree: ${server.discovery.conflicts.join('; ')}`
            : '') +
          (server.discovery?.notes.length ? `\nNotes: ${server.discovery.notes.join('; ')}` : ''),
      rationale: SETUP_CHECK.rationale,
      reference: SETUP_CHECK.reference,
      profileId: profile.id,
      metrics: {
        identity: server.identity,
        model: server.model,
        contextWindow: server.contextWindow,
        trainedContext: server.trainedContext,
        slots: server.slots,
        discovery: server.discovery,
      },
    };
    if (setupError) throw new Error(setupError);
  });
});
