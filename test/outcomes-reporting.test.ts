// Every outcome is shown for what it is wherever outcomes show: the console table and its gate line, the Markdown
// summary, the HTML matrix (cells, legend, filter), the badges and JUnit (warn, known, error and inconclusive kept
// apart). Hand-made results with one check of each outcome; the real-run JUnit is checked in test/reporters.test.ts.
import { describe, expect, test } from 'vitest';
import type { Outcome } from '../lib/model/types.ts';
import { renderHtml } from '../reporters/html.ts';
import { junitPath, renderJunit } from '../reporters/junit.ts';
import { badgeSpecs, gateLine, OUTCOMES, renderConsole, renderMarkdown, toColumns } from '../reporters/render.ts';
import type { CheckResult, ResultsFile } from '../reporters/results-types.ts';

function check(id: string, outcome: Outcome, message = `${outcome} message of ${id}`): CheckResult {
  return {
    id,
    title: `title of ${id}`,
    family: id.split('.')[0]!,
    level: outcome === 'warn' ? 'SHOULD' : 'MUST',
    outcome,
    message,
    rationale: 'r',
    reference: 'RFC 9110 §15',
    durationMs: 1500,
  };
}

function file(checks: CheckResult[], errors: ResultsFile['errors'] = []): ResultsFile {
  return {
    header: {
      suite: { name: 'llm-server-conformance', version: '0.1.0' },
      date: '2026-11-30T10:00:00.000Z',
      project: 'srv',
      profile: { id: 'srv' },
      server: { identity: { name: 'llama.cpp', version: 'b4747' } },
      machine: { label: 'box', platform: 'linux', arch: 'x64', cpus: 2, memGiB: 24, node: 'v20' },
      tier: 'quick',
      strict: false,
    },
    checks,
    ...(errors.length ? { errors } : {}),
    finished: { date: '2026-11-30T10:05:00.000Z', reason: 'passed' },
  };
}

const every = (): CheckResult[] =>
  OUTCOMES.map((o) =>
    check(
      `fam.${o}`,
      o,
      o === 'inconclusive'
        ? 'budget ran out at 3.1 tok/s while tokens still flowed'
        : `${o} message of fam.${o}\n  Expected: x\n  Actual:   y & <z>`,
    ),
  );

/** Well-formed enough for every JUnit consumer: tags balance, attributes are quoted, no raw & or <. */
function assertWellFormed(xml: string): void {
  expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')).toBe(true);
  const stack: string[] = [];
  const body = xml.replace(/^<\?xml[^>]*\?>\n/, '');
  const re = /<(\/?)([A-Za-z][\w-]*)((?:\s+[\w.:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/g;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(body))) {
    expect(m.index, `unparsed markup at ${consumed}: ${body.slice(consumed, consumed + 80)}`).toBe(consumed);
    consumed = m.index + m[0].length;
    if (m[5] !== undefined) {
      expect(m[5]).not.toMatch(/&(?!(amp|lt|gt|quot|apos|#\d+);)/);
      continue;
    }
    if (m[1]) expect(stack.pop(), `closing </${m[2]}>`).toBe(m[2]);
    else if (!m[4]) stack.push(m[2]!);
  }
  expect(consumed).toBe(body.length);
  expect(stack).toEqual([]);
}

function testcaseOf(xml: string, id: string): string {
  const m = new RegExp(`<testcase [^>]*name="${id.replace(/\./g, '\\.')} — [^"]*"[^>]*>[\\s\\S]*?</testcase>`).exec(
    xml,
  );
  expect(m, `testcase ${id}`).not.toBeNull();
  return m![0];
}

describe('JUnit keeps every outcome apart', () => {
  const xml = renderJunit([file(every(), [{ where: 'suites/x.test.ts', message: 'failed to load' }])]);

  test('well-formed, with per-suite counts that JUnit consumers read', () => {
    assertWellFormed(xml);
    // fail → failures; error (and run errors) → errors; skip, inconclusive, known → skipped.
    expect(xml).toMatch(/<testsuite name="srv @ box" tests="9" failures="1" errors="2" skipped="3" /);
    expect(xml).toContain('<property name="conformance.count.inconclusive" value="1"/>');
    expect(xml).toContain('<property name="conformance.count.warn" value="1"/>');
    expect(xml).toContain('<property name="conformance.server" value="llama.cpp b4747"/>');
  });

  test('fail is a <failure>, error an <error>, never the other', () => {
    const f = testcaseOf(xml, 'fam.fail');
    expect(f).toMatch(/<failure type="fail" message="FAIL \[MUST\] fam\.fail: fail message of fam\.fail">/);
    expect(f).toContain('Expected: x');
    expect(f).toContain('y &amp; &lt;z&gt;');
    expect(f).not.toContain('<error');
    const e = testcaseOf(xml, 'fam.error');
    expect(e).toMatch(
      /<error type="error" message="ERROR \[MUST\] fam\.error \(our side, not the server&apos;s failure\): error message/,
    );
    expect(e).not.toContain('<failure');
    expect(xml).toMatch(
      /<testcase classname="srv\.run" name="run error 1: suites\/x\.test\.ts" time="0">\s*<error type="run-error"/,
    );
  });

  test('skip, inconclusive and known are skipped, each with its outcome and reason in the message', () => {
    expect(testcaseOf(xml, 'fam.inconclusive')).toContain(
      '<skipped type="inconclusive" message="INCONCLUSIVE (no verdict either way; never a failure): budget ran out at 3.1 tok/s while tokens still flowed">' +
        'INCONCLUSIVE (no verdict either way; never a failure): budget ran out at 3.1 tok/s while tokens still flowed</skipped>',
    );
    expect(testcaseOf(xml, 'fam.known')).toMatch(
      /<skipped type="known" message="KNOWN \(expected failure listed in the profile\): known message/,
    );
    expect(testcaseOf(xml, 'fam.skip')).toMatch(
      /<skipped type="skip" message="SKIP \(capability not declared or discovered\): skip message/,
    );
  });

  test('warn and known-passing pass in JUnit terms, and still say so in system-out and properties', () => {
    const w = testcaseOf(xml, 'fam.warn');
    expect(w).not.toMatch(/<failure|<error|<skipped/);
    expect(w).toContain('<property name="conformance.outcome" value="warn"/>');
    expect(w).toContain('<system-out>WARN [SHOULD] fam.warn: warn message of fam.warn');
    const kp = testcaseOf(xml, 'fam.known-passing');
    expect(kp).not.toMatch(/<failure|<error|<skipped/);
    expect(kp).toContain('<system-out>KNOWN-PASSING [MUST] fam.known-passing:');
    for (const o of OUTCOMES)
      expect(testcaseOf(xml, `fam.${o}`)).toContain(`<property name="conformance.outcome" value="${o}"/>`);
  });

  test('hostile text stays text: control characters, quotes, newlines in attributes, lone surrogates', () => {
    const nasty = renderJunit([
      file([check('fam.fail', 'fail', 'a"b\'c\n\u0001\u001b[31mred\uD83D end</failure><x>')]),
    ]);
    assertWellFormed(nasty);
    expect(nasty).not.toMatch(/[\u0001\u001b]/);
    expect(nasty).toContain('message="FAIL [MUST] fam.fail: a&quot;b&apos;c"');
    expect(nasty).toContain('&lt;/failure&gt;&lt;x&gt;');
  });

  test('no results give an empty, valid document; shards get their own file', () => {
    assertWellFormed(renderJunit([]));
    expect(junitPath('/r')).toBe('/r/junit.xml');
    expect(junitPath('/r', '2/3')).toBe('/r/junit-shard-2-of-3.xml');
  });
});

describe('console, summary, badges and HTML show inconclusive as its own outcome', () => {
  const cols = toColumns([file(every())]);

  test('console: INCONCLUSIVE in the table, counted in the tally and the gate line', () => {
    const text = renderConsole(cols, { verbose: true });
    expect(text).toMatch(/INCONCLUSIVE\s+MUST\s+fam\.inconclusive\s+budget ran out/);
    expect(text).toContain('2/6 passed'); // pass + known-passing, over the checks that reached a verdict
    expect(text).toContain('1 inconclusive');
    const gate =
      'GATE: FAILED — 8 checks: 1 pass, 1 fail, 1 error, 1 warn, 1 inconclusive (no verdict either way), 1 known, 1 known-passing, 1 skip';
    expect(text.split('\n').at(-1)).toBe(gate);
    // A person's console: every outcome but pass, with its reason, and the same gate line.
    const person = renderConsole(cols);
    expect(person).toMatch(/INCONCLUSIVE\s+fam\.inconclusive\s+budget ran out/);
    expect(person).not.toMatch(/PASS\s+fam\.pass/);
    expect(person.split('\n').at(-1)).toBe(gate);
    const passing = toColumns([file([check('a.b', 'pass'), check('a.c', 'inconclusive')])]);
    expect(gateLine(passing, { reports: '/r/index.html' })).toBe(
      'GATE: passed — 2 checks: 1 pass, 0 fail, 0 error, 1 inconclusive (no verdict either way) · reports: /r/index.html',
    );
  });

  test('summary: its own row marker, counted, and listed with the reason', () => {
    const md = renderMarkdown(cols);
    expect(md).toContain(
      '| ❔ inconclusive | MUST | `fam.inconclusive` | budget ran out at 3.1 tok/s while tokens still flowed |',
    );
    expect(md).toContain('1 inconclusive');
    expect(md).toContain('### Inconclusive (no verdict either way: never a failure, not even under strict mode)');
    expect(md).toContain('- `fam.inconclusive` (MUST): budget ran out at 3.1 tok/s while tokens still flowed');
  });

  test('badges: the count says how many were inconclusive; an inconclusive figure is not shown as one', () => {
    const two = toColumns([
      file([
        check('api.a', 'pass'),
        check('api.b', 'inconclusive'),
        {
          ...check('parallel.speedup-2', 'inconclusive'),
          metrics: { speedup: { estimate: 0.7, low: 0.2, high: 1.4 } },
        },
        check('stream.spread', 'inconclusive'),
        check('stream.ttft-before-end', 'skip'),
        check('context.over-window-400', 'inconclusive'),
      ]),
    ])[0]!;
    const b = Object.fromEntries(badgeSpecs(two).map((s) => [s.name, s]));
    expect(b.conformance).toMatchObject({ message: '1/1, 4 inconclusive', color: 'green' });
    expect(b.batching).toMatchObject({ message: 'inconclusive', color: 'lightgrey' });
    expect(b.streaming).toMatchObject({ message: 'inconclusive', color: 'lightgrey' });
    expect(b['long-context']).toMatchObject({ message: 'inconclusive', color: 'lightgrey' });
    const clean = Object.fromEntries(
      badgeSpecs(toColumns([file([check('api.a', 'pass')])])[0]!).map((s) => [s.name, s]),
    );
    expect(clean.conformance).toMatchObject({ message: '1/1', color: 'brightgreen' });
  });

  test('HTML: inconclusive cells, a legend with every outcome, a filter by outcome; graded count leaves it out', () => {
    const html = renderHtml([file(every())]);
    expect(html).toContain(
      '<td class="o" data-o="inconclusive" data-column="srv @ box"><details><summary><span class="badge b-inconclusive">inconclusive</span>',
    );
    for (const o of OUTCOMES)
      expect(html).toMatch(new RegExp(`<li data-legend="${o}"><span class="badge b-${o}">${o}</span> `));
    expect(html).toContain('<option value="inconclusive">inconclusive</option>');
    // pass + known-passing over the checks that reached a verdict (not skip, not inconclusive): 2/6.
    expect(html).toMatch(/<td class="num">2\/6<\/td><\/tr>/);
  });
});
