// Family `clients`: the client libraries people use, run against the server as applications run them. One check per
// library (pinned in package.json), each with a streaming and a non-streaming call, one request each, through a
// teeing fetch (lib/clients/tee-fetch.ts): the bytes the client was given are the bytes we judge.
//
// A check compares what the client reports with what the wire carried (content, reasoning where the client exposes
// it, finish reason, usage, text surfaced as it arrived) and fails — SHOULD: a client's own strictness is not the
// server's fault, so `warn` unless CONFORMANCE_STRICT=1 — when the client throws, reports an error (onError, 'error'
// events, error parts) or reports something other than the wire. The same bytes go through the MUST rules of the
// family that owns the API, so the verdict says whether the server also broke the API reference (naming the check)
// or only that client's expectations.

import { compareFacts, type Incremental, judgeIncremental, triggerOf } from '../lib/clients/compare.ts';
import {
  type ClientCase,
  type ClientDriver,
  clientLabel,
  DRIVERS,
  emptyObservation,
  errorText,
  installedVersion,
  type Mode,
  missingClient,
  type Observation,
} from '../lib/clients/drivers.ts';
import { teeFetch } from '../lib/clients/tee-fetch.ts';
import {
  type Facts,
  jsonFacts,
  reasoningFieldsOf,
  streamFacts,
  tolerantStream,
  wireShape,
} from '../lib/clients/wire.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { GENERATION_PATH, paceFor, uniquePrompt } from '../lib/exchange/exchange.ts';
import { bodyJson } from '../lib/http/recorder.ts';
import { evidenceFor, requestKind } from '../lib/measure/deadline-evidence.ts';
import { requestDeadlines } from '../lib/measure/deadlines.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Deadlines, Evidence, Recording, Verdict } from '../lib/model/types.ts';
import { fail, inconclusive, pass, skip } from '../lib/model/verdict.ts';
import { ECHO_TEXT } from './sse.ts';
import { judgeWire, type WireRules } from './support/client-wire-rules.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'clients',
  order: 60,
  what: 'the client libraries applications use (OpenAI SDK, Vercel AI SDK, LangChain, Anthropic SDK, ollama-js), each streaming and non-streaming against the server, compared with the wire — see [clients.md](clients.md)',
};

/** Enough tokens for text to spread over time (the reference server: ~8 ms a token), few enough to stay cheap. */
const MAX_TOKENS = 24;
const PROMPT = `Repeat the next line exactly as written (without its label), then add a few words of your own.\nECHO: ${ECHO_TEXT}`;
/** A client call that has not returned this long after the response's deadline is reported as hanging. */
const CLIENT_GRACE_MS = 5_000;
const CLIENT_CALL_MAX_MS = 120_000;

interface CaseResult {
  mode: Mode;
  call: string;
  rec?: Recording;
  wire?: Facts;
  obs: Observation;
  problems: string[];
  notes: string[];
  error?: string;
  trigger?: { where: string; bytes: string };
  rules?: WireRules;
  incremental?: Incremental;
  refused: string[];
  /** How the streamed response was framed (events per read, comments, line ends). */
  shape?: string;
}

async function callBounded(
  d: ClientDriver,
  mode: Mode,
  deadlines: Deadlines,
  c: ClientCase,
  obs: Observation,
  stop: AbortController,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  // 24 tokens need seconds even at 3 tok/s: two minutes is plenty, and keeps both calls inside the check's bound.
  const limit = Math.min(deadlines.totalMs, CLIENT_CALL_MAX_MS) + CLIENT_GRACE_MS;
  try {
    await Promise.race([
      d.run(mode, c, obs),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const e = new Error(
            `the ${mode} call did not return within ${limit} ms${deadlines.sizedBy ? ` (${deadlines.sizedBy})` : ''}`,
          );
          // A call we gave up on: end its recording too (settle() would otherwise wait for the server's own end).
          stop.abort(e);
          reject(e);
        }, limit);
      }),
    ]);
  } catch (e) {
    obs.thrown = e;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** One case: one client call, one request, everything it reported and everything the wire carried. */
async function runCase(ctx: CheckContext, d: ClientDriver, mode: Mode): Promise<CaseResult> {
  const stop = new AbortController();
  const prompt = uniquePrompt(ctx, PROMPT);
  // Sized like every request of the suite: the profile's floors, the pace on top, lowered only by this run's evidence
  // that requests of this kind get no end (a client library's own timeouts are minutes; ours bound its call).
  const kind = requestKind('POST', `${ctx.baseUrl}${GENERATION_PATH[d.flavour]}`, { stream: mode === 'stream' });
  const deadlines = requestDeadlines(
    ctx.deadlines,
    paceFor(ctx),
    { maxTokens: MAX_TOKENS, promptChars: prompt.length },
    {},
    evidenceFor(ctx.memory, kind),
  );
  const tee = teeFetch({
    baseUrl: ctx.baseUrl,
    authHeaders: ctx.headers,
    deadlines,
    evidence: { floors: ctx.deadlines, memory: ctx.memory, owner: ctx.owner },
    signal: AbortSignal.any([ctx.signal, stop.signal]),
    secrets: ctx.secrets,
    maxRequests: 1,
  });
  const obs = emptyObservation();
  const label = clientLabel(d);
  await callBounded(
    d,
    mode,
    deadlines,
    {
      root: ctx.baseUrl,
      model: ctx.profile.model,
      fetch: tee.fetch,
      prompt,
      maxTokens: MAX_TOKENS,
      extraBody: d.flavour === 'openai-chat' ? ctx.profile.extraBody : undefined,
    },
    obs,
    stop,
  );
  await tee.settle();
  const result: CaseResult = { mode, call: d.calls[mode], obs, problems: [], notes: [], refused: tee.refused };
  const ex = tee.exchanges[0];
  if (!ex?.rec) {
    // No request at all: the client failed before sending (our configuration, or it tried another origin).
    if (tee.refused.length === 0)
      throw new Error(`harness error: ${label} ${d.calls[mode]} sent no request: ${errorText(obs.thrown)}`);
    result.problems.push(`${label} tried to reach something other than the server: ${tee.refused[0]}`);
    result.error = errorText(obs.thrown);
    return result;
  }
  const rec = ex.rec;
  if (rec.failure?.kind === 'connect') throw new Error(`cannot reach ${rec.url}: ${rec.failure.message}`);
  result.rec = rec;
  const stream = mode === 'stream';
  const asked = streamFlag(rec.requestBody);
  if (asked !== undefined && asked !== stream)
    throw new Error(
      `harness error: ${label} ${d.calls[mode]} sent "stream": ${asked} in ${mode} mode (driver configuration)`,
    );
  const lost = d.flavour === 'openai-chat' ? missingExtraBody(rec.requestBody, ctx.profile.extraBody) : [];
  if (lost.length)
    throw new Error(
      `harness error: ${label} ${d.calls[mode]} did not send the profile's extraBody field(s) ${lost.join(', ')} (driver configuration)`,
    );
  let reasoningFields: string[] = [];
  if (stream && rec.status === 200) {
    const t = tolerantStream(d.flavour, rec.reads);
    result.wire = streamFacts(t.events);
    result.shape = wireShape(d.flavour, rec, t.lines);
    reasoningFields = reasoningFieldsOf(
      d.flavour,
      t.lines.map((l) => l.text),
    );
  } else if (!stream && rec.status === 200) {
    const { json } = bodyJson(rec);
    result.wire = jsonFacts(d.flavour, json);
    reasoningFields = json === undefined ? [] : reasoningFieldsOf(d.flavour, [JSON.stringify(json)]);
  }
  const f = compareFacts(d, label, result.wire, obs, reasoningFields);
  result.problems.push(...f.problems);
  result.notes.push(...f.notes);
  for (const r of tee.refused) result.problems.push(`${label}: ${r}`);
  result.error = f.error;
  if (f.error !== undefined) result.trigger = triggerOf(rec, ex.delivered, stream);
  result.rules = judgeWire(d.flavour, stream, rec, d.flavour === 'openai-chat');
  if (stream && f.problems.length === 0 && result.wire) {
    const clientTimes = obs.pieces.map((t) => t - rec.t0Abs);
    result.incremental = judgeIncremental(result.wire.contentTimes, clientTimes, ctx.loopDelay().maxMs);
    if (result.incremental.kind === 'buffered') result.problems.push(`${label} ${result.incremental.note}`);
    else result.notes.push(result.incremental.note);
  }
  return result;
}

/** The request's "stream" field (Ollama streams unless told not to); undefined when the body is not JSON. */
function streamFlag(body: string | undefined): boolean | undefined {
  try {
    const j = JSON.parse(body ?? '') as { stream?: unknown };
    return j.stream === undefined ? undefined : j.stream === true;
  } catch {
    return undefined;
  }
}

/** Top-level extraBody fields absent from (or different in) the request the client sent. */
function missingExtraBody(body: string | undefined, extra: Record<string, unknown> | undefined): string[] {
  if (!extra) return [];
  let sent: Record<string, unknown> = {};
  try {
    sent = JSON.parse(body ?? '{}') as Record<string, unknown>;
  } catch {
    /* judged as missing below */
  }
  return Object.keys(extra).filter((k) => JSON.stringify(sent[k]) !== JSON.stringify(extra[k]));
}

/** What the server did to the API reference, in one line per case. */
function wireVerdictLine(label: string, c: CaseResult): string {
  const rules = c.rules;
  if (!rules) return `${c.mode}: no response to judge`;
  const must = rules.broken.filter((b) => b.level === 'MUST');
  const should = rules.broken.filter((b) => b.level !== 'MUST');
  if (must.length)
    return `${c.mode}: the server also broke the API reference: ${must.map((b) => `${b.id} (MUST): ${b.summary}`).join('; ')}`;
  const mustIds = rules.judged.filter((j) => j.level === 'MUST').map((j) => j.id);
  const checked = mustIds.length
    ? `every MUST rule checked on these bytes (${mustIds.join(', ')})`
    : 'the request (no MUST rule of this suite covers this body)';
  if (should.length)
    return `${c.mode}: the wire met ${checked}; it broke ${should.map((b) => `${b.id} (SHOULD): ${b.summary}`).join('; ')} — so only ${label}'s expectations were broken, not a MUST of the API`;
  return `${c.mode}: the wire met ${checked}: only ${label}'s expectations were broken`;
}

function evidenceOf(cases: readonly CaseResult[]): Evidence[] {
  return cases
    .filter((c) => c.rec)
    .map((c) => ({
      label: `${c.mode}: ${c.call}`,
      status: c.rec!.status,
      wire: escapeBytes(c.rec!.body, 1500),
      readTimes: c.rec!.reads.slice(0, 200).map((r) => Math.round(r.t * 10) / 10),
      e2eMs: Math.round(c.rec!.tEnd),
    }));
}

/** The per-client record reporters build the server × client matrix from (metrics.client). */
export interface ClientCell {
  id: string;
  title: string;
  label: string;
  packages: Record<string, string>;
  stream: CaseSummary;
  nonStream: CaseSummary;
}
interface CaseSummary {
  outcome: 'pass' | 'fail' | 'inconclusive';
  error?: string;
  problem?: string;
  mustBroken: string[];
}

function summary(c: CaseResult, label: string): CaseSummary {
  // The matrix names the client in its own column: the label need not open every line.
  const bare = (s: string) => (s.startsWith(`${label} `) ? s.slice(label.length + 1) : s).slice(0, 300);
  return {
    outcome: c.problems.length ? 'fail' : c.incremental?.kind === 'starved' ? 'inconclusive' : 'pass',
    ...(c.error !== undefined ? { error: bare(c.error) } : {}),
    ...(c.problems.length ? { problem: bare(c.problems[0]!) } : {}),
    mustBroken: (c.rules?.broken ?? []).filter((b) => b.level === 'MUST').map((b) => b.id),
  };
}

function describeWire(c: CaseResult): string {
  const w = c.wire;
  if (!w) return `${c.mode}: HTTP ${c.rec?.status ?? '-'}`;
  const usage = w.usage ? `, usage ${w.usage.input ?? '?'} in / ${w.usage.output ?? '?'} out` : '';
  const reasoning = w.reasoning ? `, ${w.reasoning.length} characters of reasoning` : '';
  return `${c.mode}: ${w.text.length} characters${reasoning}, finish ${JSON.stringify(w.finish ?? null)}${usage}${c.shape ? ` (${c.shape})` : ''}`;
}

async function judgeClient(ctx: CheckContext, d: ClientDriver): Promise<Verdict> {
  // The client libraries are optional peers of the installed package: absent is a skip that says how to add them.
  const missing = missingClient(d);
  if (missing)
    return skip(
      `${d.title} is not installed (${missing.packages.join(', ')}); to check this client: ${missing.install}`,
    );
  const label = clientLabel(d);
  const cases = [await runCase(ctx, d, 'stream'), await runCase(ctx, d, 'non-stream')];
  const cell: ClientCell = {
    id: d.id,
    title: d.title,
    label,
    packages: Object.fromEntries(d.packages.map((p) => [p, installedVersion(p) ?? 'not installed'])),
    stream: summary(cases[0]!, label),
    nonStream: summary(cases[1]!, label),
  };
  const metrics = {
    client: cell,
    e2eMs: cases.map((c) => (c.rec ? Math.round(c.rec.tEnd) : undefined)),
    ttftMs: cases.map((c) => (c.wire?.contentTimes[0] === undefined ? undefined : Math.round(c.wire.contentTimes[0]))),
  };
  const failed = cases.filter((c) => c.problems.length > 0);
  const tolerated = cases.flatMap((c) =>
    (c.rules?.broken ?? []).map((b) => `${c.mode}: the wire broke ${b.id} (${b.level}): ${b.summary}`),
  );
  if (failed.length) {
    const first = failed[0]!;
    const violations: string[] = [];
    for (const c of cases) {
      const [head, ...rest] = c.problems;
      if (c !== first && head) violations.push(`${c.mode} (${c.call}): ${head}`);
      for (const p of rest) violations.push(`${c.mode}: ${p}`);
      if (c.trigger) violations.push(`${c.mode}: triggering chunk — ${c.trigger.where}: ${c.trigger.bytes}`);
      for (const l of c.obs.logs.slice(0, 3))
        violations.push(`${c.mode}: client log: ${l.replace(/\s+/g, ' ').slice(0, 300)}`);
      if (c.problems.length || c.rules?.broken.length) violations.push(wireVerdictLine(label, c));
      for (const n of c.notes) violations.push(`${c.mode}: ${n}`);
    }
    const v = fail(
      {
        requirement: `${label} (${d.title}) SHOULD work with this server the way applications use it: ${d.calls.stream} and ${d.calls['non-stream']} return the text, reasoning, finish reason and usage the wire carried, streamed text surfaces as it arrives, and the client raises no error.`,
        expected: 'no error from the client; its text, reasoning, finish reason and usage equal what the wire carried',
        actual: `${first.mode} (${first.call}): ${first.problems[0]!}`,
        violations,
        bytes: first.trigger?.bytes,
      },
      metrics,
      evidenceOf(cases),
    );
    // The client's request was not served at all (every stream a 500): the client had nothing to get wrong; the
    // run reports that cause once (lib/check/blocked.ts).
    const recs = failed.map((c) => c.rec);
    return recs.every((r) => r !== undefined) ? blockedIfUnserved(v, recs) : v;
  }
  const notes = [
    ...cases.flatMap((c) => c.notes.map((n) => `${c.mode}: ${n}`)),
    ...tolerated.map((t) => `${t} — tolerated by this client`),
  ];
  const text = `${label}: ${cases.map(describeWire).join('; ')} — reported exactly, no error${notes.length ? `\n${notes.join('\n')}` : ''}`;
  const starved = cases.find((c) => c.incremental?.kind === 'starved');
  if (starved)
    return inconclusive(
      `${text}\n(incremental surfacing could not be judged: ${starved.incremental!.note})`,
      metrics,
      evidenceOf(cases),
    );
  return pass(text, metrics, evidenceOf(cases));
}

// ---------------------------------------------------------------------------------------------------------
// Checks

const REFERENCES: Record<string, string> = {
  openai:
    'openai-node (https://github.com/openai/openai-node): chat.completions.stream() / ChatCompletionStream, chat.completions.create(); OpenAI API reference, Chat Completions streaming',
  'ai-sdk':
    'Vercel AI SDK (https://ai-sdk.dev/docs/reference/ai-sdk-core/stream-text): streamText() fullStream and onError, generateText(); @ai-sdk/openai-compatible provider',
  langchain:
    'LangChain JS ChatOpenAI (https://js.langchain.com/docs/integrations/chat/openai): .stream(), .invoke(), streamUsage',
  anthropic:
    'anthropic-sdk-typescript (https://github.com/anthropics/anthropic-sdk-typescript): messages.stream() helper, finalMessage(), messages.create(); Anthropic API docs, Streaming Messages',
  ollama: 'ollama-js (https://github.com/ollama/ollama-js): chat({ stream }) ; Ollama API docs, POST /api/chat',
};

const RATIONALES: Record<string, string> = {
  openai:
    'Most applications reach an OpenAI-compatible server through the official SDK; its stream helper rejects what its types do not allow.',
  'ai-sdk':
    'Web applications stream through the Vercel AI SDK; it reports broken chunks through onError and goes on, so lost text is silent.',
  langchain:
    'Agent frameworks call the server through LangChain, which merges chunks field by field (finish reasons, usage) as they arrive.',
  anthropic:
    'Claude-style tools talk to a Messages endpoint through the Anthropic SDK, whose stream helper is a state machine over the event flow.',
  ollama: 'Applications written for Ollama use ollama-js, which reads NDJSON lines until done: true.',
};

export const checks: CheckDef[] = DRIVERS.map(
  (d): CheckDef => ({
    id: `clients.${d.id}`,
    title: `${d.title} (${d.packages.map((p) => `${p}@${installedVersion(p) ?? '?'}`).join(', ')}) streams and answers correctly`,
    level: 'SHOULD',
    // A stream the server does not serve at all is not the client's to get wrong: the sse family reports it.
    dependsOn: ['sse.content-type'],
    rationale: RATIONALES[d.id]!,
    reference: REFERENCES[d.id]!,
    requires: [d.flavour],
    // Two calls, each bounded by min(total deadline, 2 min) + CLIENT_GRACE_MS: a hung server fails the call inside the
    // check; this bound is only for our own bugs.
    timeoutMs: 2 * (CLIENT_CALL_MAX_MS + CLIENT_GRACE_MS) + 30_000,
    run: (ctx) => judgeClient(ctx, d),
  }),
);

// ---------------------------------------------------------------------------------------------------------
// Proofs: every client passes on the correct server and on behaviour that is valid at MUST level; each client fails,
// with its own error in the message, on a fault that breaks it the way it really breaks.

/** Behaviour valid at MUST level that real servers show: each client must pass on every one. */
/** Each with what the pass message must show, so the proof knows the behaviour reached the client. */
const VALID_VARIATIONS: Array<{ name: string; serverArgs: string[]; shows: string | RegExp }> = [
  {
    name: 'SSE comments',
    serverArgs: ['--ping-ms', '5', '--decode-step-ms', '12'],
    shows: /stream: .*(SSE comments|NDJSON lines)/,
  },
  {
    name: 'usage in the finish chunk',
    serverArgs: ['--fault', 'sse-usage-in-finish'],
    shows: /stream: .*usage \d+ in \/ \d+ out/,
  },
  {
    name: 'usage: null on every chunk',
    serverArgs: ['--fault', 'valid-usage-null'],
    shows: /stream: .*usage \d+ in \/ \d+ out/,
  },
  {
    name: 'reasoning deltas before content',
    serverArgs: ['--fault', 'valid-reasoning-first'],
    shows: 'characters of reasoning',
  },
  { name: 'CRLF line ends', serverArgs: ['--fault', 'valid-crlf'], shows: /CRLF line ends|NDJSON lines/ },
  {
    name: 'data: without a space',
    serverArgs: ['--fault', 'valid-data-no-space'],
    shows: /"data:" without a space|NDJSON lines/,
  },
  {
    name: 'several events per write',
    serverArgs: ['--fault', 'valid-coalesced-writes'],
    shows: /stream: .*\(up to [2-9] in one read\)/,
  },
];

/** Faults that break each client, the words of the client's own error, and what the message says about the wire. */
const BREAKING: Record<string, Array<{ fault: string; clientError: string | RegExp; wire: string }>> = {
  openai: [
    {
      fault: 'sse-json-split-events',
      clientError: /threw \w*Error: .* in JSON at position/,
      wire: 'sse.one-json-per-event (MUST)',
    },
    {
      fault: 'clients-no-choice-index',
      clientError: 'stream ended without producing a ChatCompletionMessage with role=assistant',
      wire: 'sse.chunk-schema (MUST)',
    },
  ],
  'ai-sdk': [
    {
      fault: 'sse-finish-missing',
      clientError: 'Response stream ended without a finish reason',
      wire: 'sse.finish-once (MUST)',
    },
  ],
  langchain: [
    {
      fault: 'sse-two-json-one-event',
      clientError: /threw SyntaxError: Unexpected non-whitespace character after JSON/,
      wire: 'sse.one-json-per-event (MUST)',
    },
  ],
  anthropic: [
    {
      fault: 'anthropic-no-message-stop',
      clientError: 'stream ended without producing a Message with role=assistant',
      wire: 'anthropic.event-sequence (MUST)',
    },
    {
      fault: 'anthropic-delta-no-usage',
      clientError: "Cannot read properties of undefined (reading 'output_tokens')",
      wire: "only @anthropic-ai/sdk 1.14.0's expectations were broken",
    },
  ],
  ollama: [
    {
      fault: 'ollama-no-done-line',
      clientError: 'Did not receive done or success response in stream',
      wire: 'ollama.done-line (MUST)',
    },
  ],
};

export const proofs: Proof[] = [
  ...DRIVERS.map((d) =>
    passProof(`clients.${d.id}`, {
      messageIncludes: ['reported exactly, no error', 'first text surfaced at'],
      // A profile's extraBody must reach the server through every OpenAI client (the check refuses to run otherwise).
      profile: { extraBody: { chat_template_kwargs: { enable_thinking: false }, top_k: 1 } },
    }),
  ),
  ...VALID_VARIATIONS.flatMap((v) =>
    DRIVERS.map((d) => {
      const faults = v.serverArgs.filter((_, i) => v.serverArgs[i - 1] === '--fault');
      const args = v.serverArgs.filter((a, i) => a !== '--fault' && v.serverArgs[i - 1] !== '--fault');
      return passProof(`clients.${d.id}`, {
        ...(faults.length ? { faults } : {}),
        ...(args.length ? { serverArgs: args } : {}),
        messageIncludes: ['reported exactly, no error', v.shows],
        note: v.name,
        shareServer: true,
      });
    }),
  ),
  ...DRIVERS.flatMap((d) =>
    BREAKING[d.id]!.map((b) =>
      faultProof(`clients.${d.id}`, b.fault, [b.clientError, clientLabel(d), b.wire, 'triggering chunk'], {
        expect: 'warn',
      }),
    ),
  ),
];
