// The command line: subcommands and options, parsed into plain values. A usage error is a message naming the problem,
// never an exception from deep inside a run.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CAPACITY_FLAGS, type CapacityFlag, parseSlo } from '../lib/capacity/config.ts';
import { CHECKS_OF, FAMILY_ORDER } from '../lib/check/family-order.ts';
import type { RunOptions } from './run.ts';

export const EXIT = {
  /** The gate passed: no fail, no error (warn, inconclusive and known issues do not fail it). */
  passed: 0,
  /** The gate failed: a check failed or errored, or (with --fail-on-regression) a figure regressed against --baseline. */
  failed: 1,
  /** Bad command line or profile: nothing was run. */
  usage: 2,
  /** The server never passed its readiness probe within the wait bound. */
  neverReady: 3,
  /** Our side went wrong (no results written, harness crash). */
  internal: 4,
} as const;

export class UsageError extends Error {}

type Command =
  | { kind: 'run'; options: RunOptions }
  | { kind: 'list'; json: boolean }
  | { kind: 'explain'; id: string }
  | { kind: 'report'; argv: string[] }
  | { kind: 'compare'; argv: string[] }
  | { kind: 'merge'; argv: string[] }
  | { kind: 'help' }
  | { kind: 'version' };

/** Families a user may name in --skip (setup always runs; a file such as api-last belongs to its family, CHECKS_OF)… */
const SELECTABLE_FAMILIES = FAMILY_ORDER.filter((f) => f !== 'setup' && !(f in CHECKS_OF));
/** … and in --only, where `setup` alone means "is it reachable and ready". */
export const ONLY_FAMILIES = ['setup', ...SELECTABLE_FAMILIES];

export const HELP = `llm-server-conformance: check that an OpenAI-compatible LLM server streams, batches, limits and reports correctly.

Usage:
  llm-server-conformance --base-url URL [--model M] [--api-key-env NAME] [options]
  llm-server-conformance --base-url URL --start "CMD" [--cwd DIR] [options]
  llm-server-conformance --servers FILE --server ID [options]
  llm-server-conformance list [--json]            every check: id, level, rationale, reference
  llm-server-conformance explain ID               what a check checks, how it is graded, how to reproduce it
  llm-server-conformance report [results.json …] [--out DIR]   console, summary, badges, JUnit and HTML from results files
  llm-server-conformance compare OLD.json NEW.json             checks and figures that changed beyond noise
  llm-server-conformance merge A.json B.json … [--out FILE]    capacity tables of several load machines, one table

Server:
  --base-url URL        the server's root (/v1 optional); may hold {port} with --start (a free port is filled in)
  --model M             model id to request (default: the one model GET /v1/models lists)
  --api-key-env NAME    environment variable that holds the API key (default OPENAI_API_KEY); the key goes only
                        into the Authorization header, never into logs or reports
  --start "CMD"         start the server with this shell command (stopped with its children afterwards)
  --cwd DIR             folder to start it in (default: the current folder)
  --servers FILE        a servers file (profiles; see docs/profiles.md) …
  --server ID           … and the profile in it to run

Run:
  --wait SECONDS        wait this long for the server to pass its readiness probe (default: the profile's
                        startTimeoutMs, 600 s unless it says otherwise: a model load takes minutes)
  --tier quick|full     quick (default, a PR gate) or full (long context, 32-way scaling, long cycles)
  --strict              SHOULD checks fail instead of warn
  --only FAM,FAM        run only these check families     --skip FAM,FAM   leave these out
  --deadline SECONDS    bound on the checks, counted from readiness; every report is still written
  --reports DIR         where reports go (default ./conformance-reports): DIR/<project>/results.json,
                        summary.md, junit.xml, badges/, index.html
  --baseline FILE       a results.json to compare with (e.g. from the base branch): regressions are listed
  --fail-on-regression  … and fail the gate
  --machine LABEL       machine label recorded in the results (default: the host name)
  --capacity            also run the capacity family: a concurrency sweep to saturation and request-rate runs,
                        every figure certified (minutes; never part of the quick gate): docs/capacity.md
  --slo ttft-p99=MS,itl-p99=MS,e2e-p99=MS   goodput counts the requests that meet it (with --capacity)
  --dataset FILE        capacity prompts from a file: JSONL of OpenAI messages arrays, or ShareGPT JSON
  Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults):
  --max-concurrency N[,N…]   the sweep's bound (1, 2, 4, … N), or its levels, each measured; and the most
                        requests a rate run keeps in flight
  --request-rate R[,R…] rate runs at these req/s (inf: all at once) instead of fractions of saturation
  --num-prompts N       requests per rate run and at least per sweep level (a p99 needs 100)
  --burstiness B        gamma shape of the arrival gaps: 1 Poisson (default), below 1 burstier, inf constant
  --input-len N, --output-len N   synthetic prompt and answer lengths in tokens (default 64, 64)
  --quiet               no progress lines (the final table and gate line still print)

Families: ${SELECTABLE_FAMILIES.join(', ')} (--only setup: reachability alone)

Exit codes: 0 gate passed · 1 gate failed · 2 usage error · 3 server never ready · 4 internal error
A CI job's timeout must cover the wait and the deadline.

Examples:
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --model my-model
  npx llm-server-conformance --base-url http://127.0.0.1:{port} --start "python -m my_server --port {port}" --wait 900
  npx llm-server-conformance --servers servers.json --server my-server --only sse,stream --deadline 600
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --baseline base/results.json --fail-on-regression
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --capacity --only capacity --slo ttft-p99=500,itl-p99=50
  npx llm-server-conformance explain stream.ttft-before-end`;

function families(raw: string | undefined, flag: '--only' | '--skip'): string[] | undefined {
  if (raw === undefined) return undefined;
  const allowed = flag === '--only' ? ONLY_FAMILIES : SELECTABLE_FAMILIES;
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.length) throw new UsageError(`${flag} needs a comma-separated list of families (${allowed.join(', ')})`);
  for (const f of list) {
    if (!allowed.includes(f)) throw new UsageError(`${flag}: unknown family "${f}"; families: ${allowed.join(', ')}`);
  }
  return list;
}

function seconds(raw: string | undefined, flag: string, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!raw.trim() || !Number.isFinite(n) || n < min)
    throw new UsageError(`${flag} needs a number of seconds ≥ ${min}, not "${raw}"`);
  return n;
}

/** argv (after the program name) → a command; throws UsageError naming the problem. */
export function parseCommand(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === 'list') {
    const { values } = parseArgs({
      args: rest,
      options: { json: { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    });
    return { kind: 'list', json: !!values.json };
  }
  if (first === 'explain') {
    if (rest.length !== 1 || rest[0]!.startsWith('-'))
      throw new UsageError('explain needs one check id, e.g. explain sse.done-terminator');
    return { kind: 'explain', id: rest[0]! };
  }
  if (first === 'report') return { kind: 'report', argv: rest };
  if (first === 'compare') return { kind: 'compare', argv: rest };
  if (first === 'merge') return { kind: 'merge', argv: rest };
  if (first === 'help') return { kind: 'help' };
  const args = first === 'run' ? rest : argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
        'base-url': { type: 'string' },
        model: { type: 'string' },
        'api-key-env': { type: 'string' },
        start: { type: 'string' },
        cwd: { type: 'string' },
        servers: { type: 'string' },
        server: { type: 'string' },
        wait: { type: 'string' },
        tier: { type: 'string' },
        strict: { type: 'boolean' },
        only: { type: 'string' },
        skip: { type: 'string' },
        deadline: { type: 'string' },
        reports: { type: 'string' },
        baseline: { type: 'string' },
        'fail-on-regression': { type: 'boolean' },
        machine: { type: 'string' },
        quiet: { type: 'boolean' },
        capacity: { type: 'boolean' },
        slo: { type: 'string' },
        dataset: { type: 'string' },
        ...Object.fromEntries(Object.keys(CAPACITY_FLAGS).map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values;
  if (v.help) return { kind: 'help' };
  if (v.version) return { kind: 'version' };
  if (!v['base-url'] && !v.servers && !v.server)
    throw new UsageError('say which server: --base-url URL, or --servers FILE --server ID (see --help)');
  if (v['base-url'] && (v.servers || v.server))
    throw new UsageError('--base-url and --servers/--server are two ways to name the server: give one');
  if (!v['base-url'] && (!v.servers || !v.server)) throw new UsageError('--servers FILE and --server ID go together');
  if ((v.start || v.cwd) && !v['base-url'])
    throw new UsageError('--start and --cwd go with --base-url (a servers file gives its own start command)');
  if (v.cwd && !v.start) throw new UsageError('--cwd is the folder --start runs in: give --start too');
  if ((v.model || v['api-key-env']) && !v['base-url'])
    throw new UsageError('--model and --api-key-env go with --base-url (a servers file names its own)');
  if (v['api-key-env'] && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(v['api-key-env']))
    throw new UsageError(
      `--api-key-env takes the NAME of an environment variable, not "${v['api-key-env']}" (never the key itself)`,
    );
  if (v.tier && v.tier !== 'quick' && v.tier !== 'full')
    throw new UsageError(`--tier must be quick or full, not "${v.tier}"`);
  if (v['fail-on-regression'] && !v.baseline) throw new UsageError('--fail-on-regression needs --baseline FILE');
  const capacityFlags = capacityFlagValues(v as Record<string, string | boolean | undefined>);
  const shaping = [
    ...(v.slo ? ['--slo'] : []),
    ...(v.dataset ? ['--dataset'] : []),
    ...Object.keys(CAPACITY_FLAGS)
      .filter((f) => (v as Record<string, unknown>)[f] !== undefined)
      .map((f) => `--${f}`),
  ];
  if (shaping.length && !v.capacity && !v.only?.split(',').includes('capacity'))
    throw new UsageError(
      `${shaping.join(', ')} shape${shaping.length === 1 ? 's' : ''} a capacity run: give --capacity too`,
    );
  if (v.slo)
    try {
      parseSlo(v.slo);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  if (v.dataset && !existsSync(v.dataset)) throw new UsageError(`--dataset: no such file ${v.dataset}`);
  const only = families(v.only, '--only');
  const skip = families(v.skip, '--skip');
  if (only && skip) throw new UsageError('--only and --skip together: give one');
  return {
    kind: 'run',
    options: {
      baseUrl: v['base-url'],
      model: v.model,
      apiKeyEnv: v['api-key-env'],
      start: v.start,
      cwd: v.cwd,
      serversFile: v.servers,
      server: v.server,
      waitSeconds: seconds(v.wait, '--wait', 0),
      tier: v.tier as 'quick' | 'full' | undefined,
      strict: !!v.strict,
      only,
      skip,
      deadlineSeconds: seconds(v.deadline, '--deadline', 10),
      reportsDir: v.reports,
      baseline: v.baseline,
      failOnRegression: !!v['fail-on-regression'],
      machine: v.machine,
      progress: v.quiet ? 'none' : undefined,
      // Asking for the capacity family by name is asking for the run.
      ...(v.capacity || only?.includes('capacity') ? { capacity: true } : {}),
      ...(v.slo ? { slo: v.slo } : {}),
      ...(v.dataset ? { dataset: v.dataset } : {}),
      ...capacityFlags,
    },
  };
}

/** The capacity flags given, checked (a bad value is a usage error naming the flag), as run options. */
function capacityFlagValues(v: Record<string, string | boolean | undefined>): Partial<RunOptions> {
  const out: Record<string, string> = {};
  for (const f of Object.keys(CAPACITY_FLAGS) as CapacityFlag[]) {
    const raw = v[f];
    if (typeof raw !== 'string') continue;
    try {
      CAPACITY_FLAGS[f].parse(raw);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    out[CAPACITY_OPTION[f]] = raw;
  }
  return capacityOptions(out);
}

/** Each capacity flag's run option (RunOptions, the programmatic API's names). */
export const CAPACITY_OPTION = {
  'max-concurrency': 'maxConcurrency',
  'request-rate': 'requestRate',
  'num-prompts': 'numPrompts',
  burstiness: 'burstiness',
  'input-len': 'inputLen',
  'output-len': 'outputLen',
} as const satisfies Record<CapacityFlag, keyof RunOptions>;

/** Flag text to run options: lists and numbers as the programmatic API takes them. */
function capacityOptions(raw: Record<string, string>): Partial<RunOptions> {
  const out: Partial<RunOptions> = {};
  const list = (s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  const numOrInf = (s: string): number | 'inf' => (/^\+?inf(inity)?$/i.test(s.trim()) ? 'inf' : Number(s));
  if (raw.maxConcurrency) out.maxConcurrency = list(raw.maxConcurrency).map(Number);
  if (raw.requestRate) out.requestRate = list(raw.requestRate).map(numOrInf);
  if (raw.numPrompts) out.numPrompts = Number(raw.numPrompts);
  if (raw.burstiness) out.burstiness = numOrInf(raw.burstiness);
  if (raw.inputLen) out.inputLen = Number(raw.inputLen);
  if (raw.outputLen) out.outputLen = Number(raw.outputLen);
  return out;
}
