// One Vitest project per server profile (named by its id, profile handed over with provide/inject),
// plus `self` for the suite's own tests. `vitest run` without --project runs self + reference only.

import type { TestProjectInlineConfiguration } from 'vitest/config';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { capacityRequested } from './lib/capacity/config.ts';
import { FAMILY_ORDER } from './lib/check/family-order.ts';
import { envProfile, loadServers } from './lib/config/profile.ts';
import { settingsFromEnv } from './lib/config/settings.ts';
import type { Profile } from './lib/model/types.ts';
import { CONFORMANCE_REPORTERS } from './reporters/list.ts';

export { FAMILY_ORDER };

/** Whether a project's global setup failed (never ready, model not served): it runs suites/setup.test.ts alone. */
function setupFailed(spec: TestSpecification): boolean {
  return !!(spec.project.getProvidedContext() as { run?: { setupError?: string } }).run?.setupError;
}
const SETUP_FILE = /suites[\\/]setup\.test\.ts$/;

class FamilySequencer extends BaseSequencer {
  override async sort(all: TestSpecification[]): Promise<TestSpecification[]> {
    // Vitest sorts after every global setup has run. A project whose setup failed keeps its setup file alone (the one
    // result that says why): each other file would cost a worker start and its imports to report nothing.
    const files = all.filter((f) => SETUP_FILE.test(f.moduleId) || !setupFailed(f));
    const rank = (f: TestSpecification) => {
      const m = /suites[\\/]([a-z-]+)\.test\.ts$/.exec(f.moduleId);
      const i = m ? FAMILY_ORDER.indexOf(m[1]!) : -1;
      return i === -1 ? FAMILY_ORDER.length : i;
    };
    return [...files].sort((a, b) => rank(a) - rank(b) || a.moduleId.localeCompare(b.moduleId));
  }
}

/**
 * Project names asked for: on Vitest's command line (--project x, --project=x), or in CONFORMANCE_PROJECTS (comma
 * separated), which is how the CLI asks when it drives Vitest programmatically (process.argv is then its own).
 */
function requestedProjects(argv: string[], env: NodeJS.ProcessEnv): string[] {
  const out: string[] = (env.CONFORMANCE_PROJECTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  argv.forEach((a, i) => {
    if (a === '--project' && argv[i + 1]) out.push(argv[i + 1]!);
    else if (a.startsWith('--project=')) out.push(a.slice('--project='.length));
  });
  return out;
}

// A bad CONFORMANCE_* setting (a deadline, a wait, a tier) stops the run here, with its message, before any server starts.
const settings = settingsFromEnv();
const requested = requestedProjects(process.argv, process.env);
const profiles: Profile[] = loadServers();
if (requested.includes('env')) {
  const env = envProfile();
  if (!env) throw new Error('--project env needs OPENAI_BASE_URL (and OPENAI_MODEL, optionally OPENAI_API_KEY)');
  profiles.push(env);
}
const known = ['self', ...profiles.map((p) => p.id), ...(requested.includes('env') ? [] : ['env']), 'real-llama'];
for (const name of requested) {
  const plain = name.replace(/^!/, '');
  if (!/[*?[\]{}]/.test(plain) && !known.includes(plain))
    throw new Error(
      `Unknown project "${plain}". Known projects: ${known.join(', ')} (servers file: ${process.env.SERVERS_FILE ?? 'servers.json'})`,
    );
}
// Without --project: the self-tests, the real-llama self-tests (a llama-server the suite starts itself, or a one-line
// skip) and the embedded reference server only (never a server someone else runs, by surprise).
const selected = requested.length ? profiles : profiles.filter((p) => p.id === 'reference');

function serverProject(profile: Profile): TestProjectInlineConfiguration {
  return {
    test: {
      name: profile.id,
      include: ['suites/**/*.test.ts'],
      // Capacity is a run mode beside the catalogue (docs/capacity.md): its file is in the run only when asked for.
      ...(capacityRequested(profile, settings)
        ? {}
        : { exclude: [...configDefaults.exclude, 'suites/capacity.test.ts'] }),
      globalSetup: ['./suites/support/global-setup.ts'],
      provide: { profile },
      // Checks talk to one server and time it: never two files at once.
      fileParallelism: false,
      maxConcurrency: 1,
      testTimeout: 120_000,
      hookTimeout: 60_000,
    },
  };
}

export default defineConfig({
  test: {
    // The sequencer is a root option (Vitest ignores it per project); self-test files sort after their names.
    sequence: { sequencer: FamilySequencer },
    // JUnit comes from the results (reporters/junit.ts: warn, known, error and inconclusive kept apart), not Vitest's own.
    reporters: ['default', ...CONFORMANCE_REPORTERS.map((r) => `./${r}`)],
    projects: [
      {
        test: {
          name: 'self',
          include: ['test/**/*.test.ts'],
          exclude: ['test/real-llama/**'],
          testTimeout: 60_000,
          hookTimeout: 30_000,
        },
      },
      {
        // The catalogue against a real llama-server in three configurations (test/real-llama). It times a server on
        // this machine's cores, so it runs after the other projects (groupOrder), one file and one check at a time.
        test: {
          name: 'real-llama',
          include: ['test/real-llama/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          maxConcurrency: 1,
          testTimeout: 150_000,
          hookTimeout: 180_000,
        },
      },
      ...selected.map(serverProject),
    ],
  },
});
