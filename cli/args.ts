// The command line: subcommands and options, parsed into plain values. A usage error is a message naming the problem,
// never an exception from deep inside a run.
import { existsSync } from 'node:fs';
import { CAPACITY_FLAGS, type CapacityFlag, parseSlo } from '../lib/capacity/config.ts';
import { CHECKS_OF, FAMILY_ORDER } from '../lib/check/family-order.ts';
import { parseApis } from '../lib/config/apis.ts';
import { closest, type OptionTable, optionHelp, parseOptions, UsageError } from './options.ts';
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
  /** Stopped by Ctrl-C (SIGINT): 128 + the signal's number, as shells report it; SIGTERM gives 143. */
  interrupted: 130,
  interruptedByTerm: 143,
} as const;

export { UsageError };

type Command =
  | { kind: 'run'; options: RunOptions }
  | { kind: 'list'; json: boolean }
  | { kind: 'explain'; id: string }
  | { kind: 'report'; argv: string[] }
  | { kind: 'compare'; argv: string[] }
  | { kind: 'merge'; argv: string[] }
  | { kind: 'reference-server'; argv: string[] }
  | { kind: 'help'; text: string }
  | { kind: 'version' };

/** Families a user may name in --skip (setup always runs; a file such as api-last belongs to its family, CHECKS_OF)… */
const SELECTABLE_FAMILIES = FAMILY_ORDER.filter((f) => f !== 'setup' && !(f in CHECKS_OF));
/** … and in --only, where `setup` alone means "is it reachable and ready". */
export const ONLY_FAMILIES = ['setup', ...SELECTABLE_FAMILIES];

/**
 * Every option of a run, with its help line: the one place a flag is declared (the parser and --help read it).
 * A flag added here still needs its value carried into RunOptions at the end of parseCommand.
 */
export const RUN_OPTIONS: OptionTable = {
  'base-url': {
    type: 'string',
    value: 'URL',
    group: 'Server',
    help: "the server's root (/v1 optional); may hold {port} with --start (a free port is filled in)",
  },
  model: {
    type: 'string',
    value: 'M',
    group: 'Server',
    help: 'model id to request (default: the one model GET /v1/models lists); one the server refuses is a\nconfiguration error (exit 2) naming the ids it serves',
  },
  'api-key-env': {
    type: 'string',
    value: 'NAME',
    group: 'Server',
    help: 'environment variable that holds the API key (default OPENAI_API_KEY); the key goes only\ninto the Authorization header, never into logs or reports',
  },
  start: {
    type: 'string',
    value: '"CMD"',
    group: 'Server',
    help: 'start the server with this shell command (stopped with its children afterwards)',
  },
  cwd: { type: 'string', value: 'DIR', group: 'Server', help: 'folder to start it in (default: the current folder)' },
  apis: {
    type: 'string',
    value: 'LIST',
    group: 'Server',
    help: 'the APIs the server offers (openai-chat, openai-completions, anthropic-messages,\nollama-native), a complete list: nothing is probed (default: openai-chat assumed,\nthe rest probed at setup)',
  },
  servers: {
    type: 'string',
    value: 'FILE',
    group: 'Server',
    help: 'a servers file (profiles; see docs/profiles.md) …',
  },
  server: {
    type: 'string',
    value: 'ID',
    group: 'Server',
    help: '… and the profile in it to run (without --servers: the bundled servers.json)',
  },
  wait: {
    type: 'string',
    value: 'SECONDS',
    group: 'Run',
    help: "wait this long for the server to pass its readiness probe (default: the profile's\nstartTimeoutMs, 600 s unless it says otherwise: a model load takes minutes)",
  },
  tier: {
    type: 'string',
    value: 'quick|full',
    group: 'Run',
    help: 'quick (default, a PR gate) or full (long context, 32-way scaling, long cycles)',
  },
  strict: { type: 'boolean', group: 'Run', help: 'SHOULD checks fail instead of warn' },
  only: { type: 'string', value: 'FAM,FAM', group: 'Run', help: 'run only these check families' },
  skip: { type: 'string', value: 'FAM,FAM', group: 'Run', help: 'leave these families out' },
  deadline: {
    type: 'string',
    value: 'SECONDS',
    group: 'Run',
    help: 'bound on the checks, counted from readiness; every report is still written',
  },
  reports: {
    type: 'string',
    value: 'DIR',
    group: 'Run',
    help: 'where reports go (default ./conformance-reports): DIR/<project>/results.json,\nsummary.md, junit.xml, badges/, index.html',
  },
  baseline: {
    type: 'string',
    value: 'FILE',
    group: 'Run',
    help: 'a results.json to compare with (e.g. from the base branch): regressions are listed',
  },
  'fail-on-regression': { type: 'boolean', group: 'Run', help: '… and fail the gate' },
  machine: {
    type: 'string',
    value: 'LABEL',
    group: 'Run',
    help: 'machine label recorded in the results (default: the host name)',
  },
  capacity: {
    type: 'boolean',
    group: 'Run',
    help: 'also run the capacity family: a concurrency sweep to saturation and request-rate runs,\nevery figure certified (minutes; never part of the quick gate): docs/capacity.md',
  },
  slo: {
    type: 'string',
    value: 'SPEC',
    group: 'Run',
    help: 'ttft-p99=MS,itl-p99=MS,e2e-p99=MS: goodput counts the requests that meet it (with --capacity)',
  },
  dataset: {
    type: 'string',
    value: 'FILE',
    group: 'Run',
    help: 'capacity prompts from a file: JSONL of OpenAI messages arrays, or ShareGPT JSON',
  },
  'max-concurrency': {
    type: 'string',
    value: 'N[,N…]',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: "the sweep's bound (1, 2, 4, … N), or its levels, each measured; and the most requests a\nrate run keeps in flight",
  },
  'request-rate': {
    type: 'string',
    value: 'R[,R…]',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: 'rate runs at these req/s (inf: all at once) instead of fractions of saturation',
  },
  'num-prompts': {
    type: 'string',
    value: 'N',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: 'requests per rate run and at least per sweep level (a p99 needs 100)',
  },
  burstiness: {
    type: 'string',
    value: 'B',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: 'gamma shape of the arrival gaps: 1 Poisson (default), below 1 burstier, inf constant',
  },
  'input-len': {
    type: 'string',
    value: 'N',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: 'synthetic prompt length in tokens (default 64)',
  },
  'output-len': {
    type: 'string',
    value: 'N',
    group: "Capacity, named as vllm bench serve names them (with --capacity; the profile's values are the defaults)",
    help: 'synthetic answer length in tokens (default 64)',
  },
  quiet: { type: 'boolean', group: 'Run', help: 'no progress lines (what did not pass and the gate line still print)' },
  verbose: {
    type: 'boolean',
    group: 'Run',
    help: 'every check as it ends and in the final table, with the workloads and the client matrix\n(default: what did not pass, by family, and one gate line)',
  },
  help: { type: 'boolean', short: 'h', group: 'Run', help: 'this help (every command takes --help)' },
  version: { type: 'boolean', group: 'Run', help: "the package's version" },
};

const HELP_CMD = 'llm-server-conformance --help';

export function helpText(): string {
  return `llm-server-conformance: check that an OpenAI-compatible LLM server streams, batches, limits and reports correctly.

Usage:
  llm-server-conformance --base-url URL [--model M] [--api-key-env NAME] [options]
  llm-server-conformance --base-url URL --start "CMD" [--cwd DIR] [options]
  llm-server-conformance --servers FILE --server ID [options]
  llm-server-conformance --server ID [options]    a profile of the bundled servers.json (e.g. reference)
  llm-server-conformance reference-server [--port P] [--fault NAME] [--list-faults]
                                                  start the bundled reference server (to try the suite on)
  llm-server-conformance list [--json]            every check: id, level, rationale, reference
  llm-server-conformance explain ID               what a check checks, how it is graded, how to reproduce it
  llm-server-conformance report [results.json …] [--out DIR]   console, summary, badges, JUnit and HTML from results files
  llm-server-conformance compare OLD.json NEW.json             checks and figures that changed beyond noise
  llm-server-conformance merge A.json B.json … [--out FILE]    capacity tables of several load machines, one table
  llm-server-conformance COMMAND --help           a command's own options

${optionHelp(RUN_OPTIONS)}

Families: ${SELECTABLE_FAMILIES.join(', ')} (--only setup: reachability alone; every --only run ends with health.sentinel)

Exit codes: 0 gate passed · 1 gate failed · 2 usage or configuration error · 3 server never ready · 4 internal error
            130 interrupted by Ctrl-C (143 by SIGTERM): every report is written from the checks that finished
A setup mistake (a bad flag or file, a model the server does not serve, no server) is one message before any check,
never a check failure. A CI job's timeout must cover the wait and the deadline.

Examples:
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --model my-model
  npx llm-server-conformance --base-url http://127.0.0.1:{port} --start "python -m my_server --port {port}" --wait 900
  npx llm-server-conformance --servers servers.json --server my-server --only sse,stream --deadline 600
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --baseline base/results.json --fail-on-regression
  npx llm-server-conformance --base-url http://127.0.0.1:8000 --capacity --only capacity --slo ttft-p99=500,itl-p99=50
  npx llm-server-conformance explain stream.ttft-before-end`;
}

const LIST_OPTIONS: OptionTable = {
  json: { type: 'boolean', help: 'the catalogue as JSON (id, family, level, rationale, reference, thresholds)' },
  help: { type: 'boolean', short: 'h', help: 'this help' },
};
const LIST_HELP = `usage: llm-server-conformance list [--json]

Every check of the catalogue: id, level (MUST/SHOULD), family, title, rationale and reference.

${optionHelp(LIST_OPTIONS)}`;

const EXPLAIN_OPTIONS: OptionTable = { help: { type: 'boolean', short: 'h', help: 'this help' } };
const EXPLAIN_HELP = `usage: llm-server-conformance explain CHECK-ID

What one check checks, why, how it is graded (thresholds and where they come from) and how to reproduce it by
hand with curl. \`llm-server-conformance list\` shows every id (e.g. sse.done-terminator).

${optionHelp(EXPLAIN_OPTIONS)}`;

/** Subcommands; `report`, `compare` and `merge` parse their own options (scripts/<name>.ts). */
const COMMANDS = ['run', 'list', 'explain', 'report', 'compare', 'merge', 'reference-server', 'help'];

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
    const { values } = parseOptions(LIST_OPTIONS, rest, { helpCommand: 'llm-server-conformance list --help' });
    if (values.help) return { kind: 'help', text: LIST_HELP };
    return { kind: 'list', json: !!values.json };
  }
  if (first === 'explain') {
    const { values, positionals } = parseOptions(EXPLAIN_OPTIONS, rest, {
      positionals: true,
      helpCommand: 'llm-server-conformance explain --help',
    });
    if (values.help) return { kind: 'help', text: EXPLAIN_HELP };
    if (positionals.length !== 1)
      throw new UsageError(
        'explain needs one check id, e.g. explain sse.done-terminator (llm-server-conformance list shows them all)',
      );
    return { kind: 'explain', id: positionals[0]! };
  }
  if (first === 'report') return { kind: 'report', argv: rest };
  if (first === 'compare') return { kind: 'compare', argv: rest };
  if (first === 'merge') return { kind: 'merge', argv: rest };
  if (first === 'reference-server') return { kind: 'reference-server', argv: rest };
  if (first === 'help') {
    // `help COMMAND` is `COMMAND --help`.
    if (rest[0] && rest[0] !== 'run' && rest[0] !== 'help' && COMMANDS.includes(rest[0]))
      return parseCommand([rest[0], '--help']);
    return { kind: 'help', text: helpText() };
  }
  if (first !== undefined && !first.startsWith('-') && first !== 'run') {
    const near = closest(first, COMMANDS);
    throw new UsageError(
      `unknown command "${first}"${near ? `; did you mean ${near}?` : ''} (commands: ${COMMANDS.join(', ')}; a run takes options only: ${HELP_CMD})`,
    );
  }
  const args = first === 'run' ? rest : argv;
  // Boolean options are only tested for truth: one record type keeps `v.flag` reading alike for both kinds.
  const v = parseOptions(RUN_OPTIONS, args, { helpCommand: HELP_CMD }).values as Record<string, string | undefined>;
  if (v.help) return { kind: 'help', text: helpText() };
  if (v.version) return { kind: 'version' };
  if (!v['base-url'] && !v.servers && !v.server)
    throw new UsageError('say which server: --base-url URL, or --servers FILE --server ID (see --help)');
  if (v['base-url'] && (v.servers || v.server))
    throw new UsageError('--base-url and --servers/--server are two ways to name the server: give one');
  if (v.servers && !v.server) throw new UsageError('--servers FILE needs --server ID (the profile in it to run)');
  if ((v.start || v.cwd) && !v['base-url'])
    throw new UsageError('--start and --cwd go with --base-url (a servers file gives its own start command)');
  if (v.cwd && !v.start) throw new UsageError('--cwd is the folder --start runs in: give --start too');
  if ((v.model || v['api-key-env'] || v.apis) && !v['base-url'])
    throw new UsageError('--model, --api-key-env and --apis go with --base-url (a servers file names its own)');
  let apis: RunOptions['apis'];
  try {
    apis = v.apis === undefined ? undefined : parseApis(v.apis);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
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
      ...(apis ? { apis } : {}),
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
      ...(v.verbose ? { verbose: true } : {}),
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
