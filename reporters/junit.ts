// JUnit XML for CI pages, built from the results (a pure function, like every other report): one <testsuite> per
// project, one <testcase> per check, named like its Vitest test (`<id> — <title>`, stable across runs).
//
// JUnit knows passed, failure, error and skipped; our vocabulary is larger, so each outcome is carried three ways:
//  - the element every JUnit consumer reads: fail → <failure>, error → <error> (counted in `errors`, not `failures`),
//    skip / inconclusive / known → <skipped> whose `message` attribute and content start with the outcome and give the
//    reason (pytest reports an expected failure the same way; GitLab shows the content, Jenkins the attribute),
//    pass / warn / known-passing → a passed test case;
//  - <system-out>: "OUTCOME [LEVEL] id: message" for every check, so a warn or a known issue that now passes (a
//    passed test case in JUnit terms) is still visible where viewers show a test's output;
//  - <properties>: conformance.outcome, conformance.level, conformance.id (per test case), and the counts of every
//    outcome per test suite.
// Vitest's own junit reporter cannot do this (its <skipped/> carries no message and it has no error/failure split).
import { join } from 'node:path';
import { redact } from '../lib/config/secrets.ts';
import type { Outcome, SetupFailure } from '../lib/model/types.ts';
import { describeSetupFailure, SETUP_HEADLINE, setupFailureOf } from '../lib/server/setup-failure.ts';
import { SETUP_CHECK } from '../suites/support/setup-check.ts';
import { OUTCOMES, tally } from './render.ts';
import { shardOf, writeTextAtomic } from './results.ts';
import type { CheckResult, ResultsFile } from './results-types.ts';
import { RunAllReporter } from './run-end.ts';

/** Characters XML 1.0 does not allow (C0 controls except tab/LF/CR, lone surrogates, U+FFFE/U+FFFF) become U+FFFD. */
function xmlSafe(s: string): string {
  return s.replace(
    /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    '\uFFFD',
  );
}
const ENT: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
function attr(v: unknown): string {
  return xmlSafe(String(v ?? ''))
    .replace(/[&<>"']/g, (c) => ENT[c]!)
    .replace(/\r/g, '&#13;')
    .replace(/\n/g, '&#10;')
    .replace(/\t/g, '&#9;');
}
function text(v: unknown): string {
  return xmlSafe(String(v ?? '')).replace(/[&<>]/g, (c) => ENT[c]!);
}

function firstLine(s: string, max = 300): string {
  const line = (s.split('\n').find((l) => l.trim()) ?? '').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const LABEL: Record<Outcome, string> = {
  pass: 'PASS',
  fail: 'FAIL',
  warn: 'WARN',
  inconclusive: 'INCONCLUSIVE',
  skip: 'SKIP',
  known: 'KNOWN',
  'known-passing': 'KNOWN-PASSING',
  error: 'ERROR',
};

/** What a skipped test case says before the reason: the outcome and what it means. */
const SKIPPED_AS: Partial<Record<Outcome, string>> = {
  skip: 'SKIP (capability not declared or discovered)',
  inconclusive: 'INCONCLUSIVE (no verdict either way; never a failure)',
  known: 'KNOWN (expected failure listed in the profile)',
};

function seconds(ms: number | undefined): string {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? (ms / 1000).toFixed(3) : '0';
}

function property(name: string, value: unknown): string {
  return `<property name="${attr(name)}" value="${attr(value)}"/>`;
}

function testcase(project: string, c: CheckResult, stopped?: SetupFailure): string {
  const name = c.title ? `${c.id} — ${c.title}` : c.id;
  const out: string[] = [
    `    <testcase classname="${attr(`${project}.${c.family}`)}" name="${attr(name)}" time="${seconds(c.durationMs)}"${c.file ? ` file="${attr(c.file)}"` : ''}>`,
  ];
  out.push(
    `      <properties>${property('conformance.id', c.id)}${property('conformance.level', c.level)}${property('conformance.outcome', c.outcome)}</properties>`,
  );
  const head = `${LABEL[c.outcome]} [${c.level}] ${c.id}`;
  if (c.outcome === 'fail')
    out.push(
      `      <failure type="fail" message="${attr(`${head}: ${firstLine(c.message)}`)}">${text(c.message)}${c.reference ? `\n\nReference: ${text(c.reference)}` : ''}</failure>`,
    );
  // What stopped the run before its checks (never ready, a configuration error) is said as that, not as our fault.
  else if (c.outcome === 'error' && stopped && c.id === SETUP_CHECK.id)
    out.push(
      `      <error type="${attr(stopped.kind)}" message="${attr(describeSetupFailure(stopped, { oneLine: true }))}">${text(describeSetupFailure(stopped))}</error>`,
    );
  else if (c.outcome === 'error')
    out.push(
      `      <error type="error" message="${attr(`${head} (our side, not the server's failure): ${firstLine(c.message)}`)}">${text(c.message)}</error>`,
    );
  // The reason both as the message attribute (Jenkins, the GitHub report actions) and as content (GitLab reads that).
  else if (SKIPPED_AS[c.outcome])
    out.push(
      `      <skipped type="${attr(c.outcome)}" message="${attr(`${SKIPPED_AS[c.outcome]}: ${firstLine(c.message, 600)}`)}">${text(`${SKIPPED_AS[c.outcome]}: ${c.message}`)}</skipped>`,
    );
  out.push(`      <system-out>${text(`${head}: ${c.message}`)}</system-out>`);
  out.push('    </testcase>');
  return out.join('\n');
}

function testsuite(file: ResultsFile): string {
  const h = file.header;
  const project = h.project;
  const t = tally(file.checks);
  const errors = file.errors ?? [];
  const time = file.checks.reduce((s, c) => s + (c.durationMs ?? 0), 0);
  const skipped = t.counts.skip + t.counts.inconclusive + t.counts.known;
  const identity = (h.server as { identity?: { name?: string; version?: string } } | undefined)?.identity;
  const props = [
    property('conformance.suite', `${h.suite?.name ?? ''} ${h.suite?.version ?? ''}`.trim()),
    property('conformance.tier', h.tier),
    property('conformance.strict', h.strict === true),
    property('conformance.machine', h.machine?.label),
    ...(identity?.name
      ? [property('conformance.server', `${identity.name}${identity.version ? ` ${identity.version}` : ''}`)]
      : []),
    ...OUTCOMES.map((o) => property(`conformance.count.${o}`, t.counts[o])),
    property('conformance.finished', file.finished !== undefined),
  ];
  const stopped = setupFailureOf(h.server);
  if (stopped) props.push(property('conformance.setup', `${SETUP_HEADLINE[stopped.kind]}: ${stopped.summary}`));
  const cases = file.checks.map((c) => testcase(project, c, stopped));
  // Problems outside any check (a test file that failed to load, a reporter error) are errors of the run.
  errors.forEach((e, i) =>
    cases.push(
      `    <testcase classname="${attr(`${project}.run`)}" name="${attr(`run error ${i + 1}: ${e.where}`)}" time="0">\n` +
        `      <error type="run-error" message="${attr(`ERROR (our side): ${firstLine(e.message)}`)}">${text(e.message)}</error>\n    </testcase>`,
    ),
  );
  return (
    `  <testsuite name="${attr(`${project} @ ${h.machine?.label ?? ''}`)}" tests="${file.checks.length + errors.length}" failures="${t.counts.fail}" errors="${t.counts.error + errors.length}" ` +
    `skipped="${skipped}" time="${seconds(time)}" timestamp="${attr(h.date)}"${h.machine?.label ? ` hostname="${attr(h.machine.label)}"` : ''}>\n` +
    `    <properties>${props.join('')}</properties>\n${cases.join('\n')}\n  </testsuite>`
  );
}

/** The JUnit document for some results files (one <testsuite> each). */
export function renderJunit(files: readonly ResultsFile[]): string {
  const all = files.flatMap((f) => f.checks);
  const t = tally(all);
  const runErrors = files.reduce((n, f) => n + (f.errors?.length ?? 0), 0);
  const time = all.reduce((s, c) => s + (c.durationMs ?? 0), 0);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="llm-server-conformance" tests="${all.length + runErrors}" failures="${t.counts.fail}" errors="${t.counts.error + runErrors}" skipped="${t.counts.skip + t.counts.inconclusive + t.counts.known}" time="${seconds(time)}">\n` +
    `${files.map(testsuite).join('\n')}${files.length ? '\n' : ''}</testsuites>\n`
  );
}

/** reports/junit.xml, or reports/junit-shard-<i>-of-<n>.xml when sharded (shards never overwrite each other). */
export function junitPath(root: string, shard?: string): string {
  if (!shard) return join(root, 'junit.xml');
  const [i, n] = shard.split('/');
  return join(root, `junit-shard-${i}-of-${n}.xml`);
}

export function writeJunit(files: readonly ResultsFile[], root: string, shard?: string): string {
  const path = junitPath(root, shard);
  writeTextAtomic(path, redact(renderJunit(files)));
  return path;
}

export default class JunitReporter extends RunAllReporter {
  protected readonly name = 'junit';
  protected renderAll(files: ResultsFile[], root: string): void {
    writeJunit(files, root, shardOf(this.vitest));
  }
}
