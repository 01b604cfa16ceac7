// The check catalogue outside Vitest (the `list` and `explain` commands): every suites/<family>.ts, imported directly.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FAMILY_ORDER } from '../lib/check/family-order.ts';
import { ROOT } from '../lib/config/profile.ts';
import type { CheckDef } from '../lib/model/check.ts';
import { SETUP_CHECK } from '../suites/support/setup-check.ts';

export interface CatalogueEntry {
  id: string;
  family: string;
  title: string;
  level: string;
  rationale: string;
  reference: string;
  requires: string[];
  tier: string;
  destructive: boolean;
  thresholds: Record<string, { value: number; why: string }>;
}

/** The setup check is registered by suites/setup.test.ts, not declared in a family file. */
const SETUP: CatalogueEntry = {
  ...SETUP_CHECK,
  family: 'setup',
  requires: [],
  tier: 'quick',
  destructive: false,
  thresholds: {},
};

export async function loadCatalogue(): Promise<CatalogueEntry[]> {
  const dir = join(ROOT, 'suites');
  const files = readdirSync(dir).filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && f !== 'catalogue.ts',
  );
  const rank = (name: string) => {
    const i = FAMILY_ORDER.indexOf(name);
    return i === -1 ? FAMILY_ORDER.length : i;
  };
  files.sort((a, b) => rank(a.replace(/\.ts$/, '')) - rank(b.replace(/\.ts$/, '')));
  const entries: CatalogueEntry[] = [SETUP];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { checks?: CheckDef[] };
    for (const c of mod.checks ?? []) {
      entries.push({
        id: c.id,
        family: c.id.split('.')[0]!,
        title: c.title,
        level: c.level,
        rationale: c.rationale,
        reference: c.reference,
        requires: [...c.requires],
        tier: c.tier ?? 'quick',
        destructive: !!c.destructive,
        thresholds: c.thresholds ?? {},
      });
    }
  }
  // Stable: api-last's checks stay after the rest of api.
  return entries.sort((a, b) => rank(a.family) - rank(b.family));
}

const LEVEL_GRADING: Record<string, string> = {
  MUST: 'MUST: not met on clear evidence is a fail (the gate fails); a quirk a client can live with, or borderline timing evidence, is a warn.',
  SHOULD:
    'SHOULD: not met is a warn (a fail under --strict when the evidence is clear); never fails the gate otherwise.',
  INFO: 'INFO: measured and reported, never a failure.',
};

/** How to see a family's behaviour by hand (BASE, MODEL and KEY are the user's own). */
const REPRODUCE: Record<string, string> = {
  api: `curl -sS "$BASE/v1/models" -H "authorization: Bearer $KEY"
curl -sS "$BASE/v1/chat/completions" -H 'content-type: application/json' -H "authorization: Bearer $KEY" \\
  -d '{"model":"'"$MODEL"'","max_tokens":8,"messages":[{"role":"user","content":"Count from 1 to 20."}]}'`,
  completions: `curl -sSN "$BASE/v1/completions" -H 'content-type: application/json' -H "authorization: Bearer $KEY" \\
  -d '{"model":"'"$MODEL"'","stream":true,"max_tokens":16,"prompt":"Count from 1 to 20."}' | cat -A`,
  anthropic: `curl -sSN "$BASE/v1/messages" -H 'content-type: application/json' -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' \\
  -d '{"model":"'"$MODEL"'","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"Count from 1 to 20."}]}' | cat -A`,
  ollama: `curl -sSN "$BASE/api/chat" -d '{"model":"'"$MODEL"'","stream":true,"messages":[{"role":"user","content":"Count from 1 to 20."}]}'`,
  errors: `curl -sS -o /dev/null -w '%{http_code}\\n' "$BASE/v1/chat/completions" -H 'content-type: application/json' -d '{"model":"'"$MODEL"'","messages":"not an array"}'`,
  context: `# a prompt longer than the served window must get HTTP 400, one within it HTTP 200
python3 -c 'import json;print(json.dumps({"model":"'"$MODEL"'","max_tokens":8,"messages":[{"role":"user","content":"word "*100000}]}))' > /tmp/long.json
curl -sS -w '\\n%{http_code} in %{time_total} s\\n' "$BASE/v1/chat/completions" -H 'content-type: application/json' -d @/tmp/long.json | tail -c 400`,
  parallel: `# two streams released together vs one alone: compare the wall times
time (for i in 1 2; do curl -sSN "$BASE/v1/chat/completions" -H 'content-type: application/json' \\
  -d '{"model":"'"$MODEL"'","stream":true,"max_tokens":128,"messages":[{"role":"user","content":"Tell a story."}]}' >/dev/null & done; wait)`,
  cycles: `for i in $(seq 10); do curl -sS -o /dev/null -w '%{time_starttransfer} %{time_total}\\n' "$BASE/v1/chat/completions" \\
  -H 'content-type: application/json' -d '{"model":"'"$MODEL"'","max_tokens":128,"messages":[{"role":"user","content":"Tell a story."}]}'; done`,
};
const STREAM_CURL = `# every event on its own line, with arrival times: look for one blank line per event, data: [DONE] last,
# and tokens arriving over time rather than all at once
curl -sSN "$BASE/v1/chat/completions" -H 'content-type: application/json' -H "authorization: Bearer $KEY" \\
  -d '{"model":"'"$MODEL"'","stream":true,"stream_options":{"include_usage":true},"max_tokens":64,"messages":[{"role":"user","content":"Count from 1 to 50."}]}' \\
  | while IFS= read -r line; do printf '%s %s\\n' "$(date +%s.%N)" "$line"; done | cat -A`;

export function explain(e: CatalogueEntry): string {
  const thresholds = Object.entries(e.thresholds).map(([k, t]) => `  ${k} = ${t.value}: ${t.why}`);
  return [
    `${e.id} [${e.level}] — ${e.title}`,
    '',
    `Why: ${e.rationale}`,
    `Reference: ${e.reference}`,
    `Runs in: the ${e.tier} tier${e.tier === 'quick' ? ' and the full one' : ' only'}${e.requires.length ? `; needs ${e.requires.join(', ')} (skipped with the reason otherwise)` : ''}${e.destructive ? '; destructive (runs after every check that only observes)' : ''}.`,
    '',
    'Graded:',
    `  ${LEVEL_GRADING[e.level] ?? e.level}`,
    '  Timing verdicts use medians and intervals over repetitions, never one sample; evidence that cannot decide is "inconclusive" (never a failure).',
    ...(thresholds.length
      ? ['Thresholds (a profile overrides them: "thresholds": {"' + e.id + '": {…}}):', ...thresholds]
      : []),
    '',
    'Run it alone:',
    `  npx llm-server-conformance --base-url $BASE --only ${e.family === 'setup' ? 'api' : e.family}`,
    'Reproduce by hand (BASE = the server root, MODEL, KEY):',
    ...(REPRODUCE[e.family] ?? STREAM_CURL).split('\n').map((l) => `  ${l}`),
  ].join('\n');
}

export function listing(entries: readonly CatalogueEntry[]): string {
  const lines: string[] = [];
  let family = '';
  for (const e of entries) {
    if (e.family !== family) {
      family = e.family;
      lines.push('', `${family}`);
    }
    lines.push(`  ${e.id.padEnd(36)} ${e.level.padEnd(6)} ${e.title}`);
    lines.push(`  ${''.padEnd(36)} ${''.padEnd(6)} why: ${e.rationale}`);
    lines.push(`  ${''.padEnd(36)} ${''.padEnd(6)} ref: ${e.reference}`);
  }
  return `${entries.length} checks in ${new Set(entries.map((e) => e.family)).size} families${lines.join('\n')}`;
}
