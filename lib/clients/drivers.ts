// The client libraries, each driven the way applications drive it: its streaming iterator or helper, and its
// non-streaming call, with the profile's base URL, model, key and extraBody, retries off, and our teeing fetch.
// A driver records what the client reports (text, reasoning where the client exposes it, finish reason, usage),
// when each piece of text surfaced, and every error it raised or reported through a callback.
//
// The libraries are imported when a check runs (dynamic import), so a profile without the API pays nothing.
// Versions are the ones installed: optional peer dependencies of the published package, with ranges as wide as this
// file drives honestly (docs/clients.md); a user who has not installed one gets the check skipped with the install
// command of the version the suite is tested with (devDependencies).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../config/profile.ts';
import { isJsonObject } from '../json.ts';
import type { ApiFlavour } from '../model/types.ts';

export interface ClientCase {
  /** Server root without /v1 and without a trailing slash. */
  root: string;
  model: string;
  fetch: typeof fetch;
  prompt: string;
  maxTokens: number;
  /** The profile's extraBody (OpenAI chat only, as every other check sends it). */
  extraBody?: Record<string, unknown>;
}

export interface Observation {
  /** Content text as the client reports it. */
  text: string;
  /** Reasoning text as the client reports it; undefined when the client exposes none. */
  reasoning?: string;
  finish?: string;
  usage?: { input?: number; output?: number };
  /** performance.now() of each piece of content text the client surfaced (streaming calls). */
  pieces: number[];
  /** Errors the client reported without throwing (onError, 'error' events, error stream parts). */
  reported: string[];
  /** What the call threw. */
  thrown?: unknown;
  /** Lines the client logged through the logger we gave it (warnings, parse errors). */
  logs: string[];
}

export type Mode = 'stream' | 'non-stream';

export interface ClientDriver {
  /** Check id suffix: clients.<id>. */
  id: string;
  title: string;
  /** The npm packages that make up the client (the first names it in messages). */
  packages: string[];
  flavour: ApiFlavour;
  /** Wire reasoning fields the client surfaces (others are not compared, and the verdict says so). */
  reasoningFields: string[];
  /** The client's documented mapping of a wire finish reason to the value it reports. */
  finishMap(wire: string): string;
  /** What the client calls in each mode, for messages. */
  calls: Record<Mode, string>;
  run(mode: Mode, c: ClientCase, obs: Observation): Promise<void>;
}

/** Placeholder credential: clients insist on one; the teeing fetch removes it and adds the profile's own. */
const PLACEHOLDER_KEY = 'conformance-placeholder';

export function emptyObservation(): Observation {
  return { text: '', pieces: [], reported: [], logs: [] };
}

export function errorText(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause;
    // Libraries subclass Error without setting name (OpenAIError, ResponseError): the class name says more.
    const name =
      e.name && e.name !== 'Error'
        ? e.name
        : e.constructor?.name && e.constructor.name !== 'Error'
          ? e.constructor.name
          : '';
    const own = `${name ? `${name}: ` : ''}${e.message}`;
    return cause instanceof Error && !own.includes(cause.message) ? `${own} (cause: ${cause.message})` : own;
  }
  if (typeof e === 'object' && e !== null) {
    try {
      return JSON.stringify(e);
    } catch {
      /* fall through */
    }
  }
  return String(e);
}

/** A logger in the shape the OpenAI and Anthropic SDKs accept, collecting into obs.logs. */
function collectingLogger(obs: Observation) {
  const put =
    (level: string) =>
    (...args: unknown[]) =>
      obs.logs.push(
        `${level}: ${args
          .map((a) => (typeof a === 'string' ? a : errorText(a)))
          .join(' ')
          .slice(0, 500)}`,
      );
  return { error: put('error'), warn: put('warn'), info: () => undefined, debug: () => undefined };
}

const messages = (c: ClientCase) => [{ role: 'user' as const, content: c.prompt }];
type Obj = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

// ---------------------------------------------------------------------------------------------------------
// openai (official SDK): chat.completions.stream() helper — iterated chunk by chunk, then finalChatCompletion(),
// which is where the helper's own validation (role, finish_reason) throws — and chat.completions.create().

const openaiDriver: ClientDriver = {
  id: 'openai',
  title: 'OpenAI SDK',
  packages: ['openai'],
  flavour: 'openai-chat',
  reasoningFields: ['reasoning_content', 'reasoning'],
  finishMap: (w) => w,
  calls: {
    stream: 'chat.completions.stream() iterated, then finalChatCompletion()',
    'non-stream': 'chat.completions.create()',
  },
  async run(mode, c, obs) {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({
      baseURL: `${c.root}/v1`,
      apiKey: PLACEHOLDER_KEY,
      fetch: c.fetch,
      maxRetries: 0,
      logger: collectingLogger(obs),
      logLevel: 'warn',
    });
    const params = {
      model: c.model,
      messages: messages(c),
      max_tokens: c.maxTokens,
      temperature: 0,
      ...(c.extraBody ?? {}),
    };
    obs.reasoning = '';
    if (mode === 'non-stream') {
      const r = await client.chat.completions.create({ ...params, stream: false });
      const ch = r.choices?.[0];
      const m = (ch?.message ?? {}) as unknown as Obj;
      obs.text = str(m.content);
      obs.reasoning = str(m.reasoning_content) || str(m.reasoning);
      obs.finish = ch?.finish_reason ?? undefined;
      if (r.usage) obs.usage = { input: r.usage.prompt_tokens, output: r.usage.completion_tokens };
      return;
    }
    // openai 4 has the helper under beta only (openai 5 moved it out): the same ChatCompletionStream either way.
    const completions = client.chat.completions as Partial<typeof client.chat.completions>;
    const beta = (client as unknown as { beta?: { chat?: { completions?: Partial<typeof client.chat.completions> } } })
      .beta?.chat?.completions;
    const helper = completions.stream ? completions : beta;
    if (!helper?.stream) throw new Error('this openai version has no chat.completions.stream() helper');
    const runner = helper.stream({ ...params, stream_options: { include_usage: true } });
    // Without a listener the helper turns an error into an unhandled rejection; with one it is reported here.
    runner.on('error', (e) => obs.reported.push(errorText(e)));
    for await (const chunk of runner) {
      const ch = chunk.choices?.[0];
      const d = (ch?.delta ?? {}) as unknown as Obj;
      const piece = str(d.content);
      if (piece) {
        obs.text += piece;
        obs.pieces.push(performance.now());
      }
      obs.reasoning += str(d.reasoning_content) || str(d.reasoning);
      if (ch?.finish_reason) obs.finish = ch.finish_reason;
      if (chunk.usage) obs.usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens };
    }
    const final = await runner.finalChatCompletion();
    const fc = final.choices?.[0];
    // The helper's assembled message is what most applications show: it must agree with the chunks.
    if (fc && str(fc.message?.content) !== obs.text)
      obs.reported.push(
        `finalChatCompletion() content ${JSON.stringify(str(fc.message?.content).slice(0, 80))} differs from the streamed chunks ${JSON.stringify(obs.text.slice(0, 80))}`,
      );
  },
};

// ---------------------------------------------------------------------------------------------------------
// Vercel AI SDK: streamText() over fullStream (text-delta, reasoning-delta, error parts) with onError, and
// generateText(); the provider is @ai-sdk/openai-compatible (extraBody travels as its providerOptions).

const AI_SDK_FINISH: Record<string, string> = {
  stop: 'stop',
  length: 'length',
  content_filter: 'content-filter',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
};

const aiSdkDriver: ClientDriver = {
  id: 'ai-sdk',
  title: 'Vercel AI SDK',
  packages: ['ai', '@ai-sdk/openai-compatible'],
  flavour: 'openai-chat',
  reasoningFields: ['reasoning_content', 'reasoning'],
  finishMap: (w) => AI_SDK_FINISH[w] ?? 'other',
  calls: { stream: 'streamText() fullStream with onError', 'non-stream': 'generateText()' },
  async run(mode, c, obs) {
    const { streamText, generateText } = await import('ai');
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const provider = createOpenAICompatible({
      name: 'server',
      baseURL: `${c.root}/v1`,
      apiKey: PLACEHOLDER_KEY,
      fetch: c.fetch,
      includeUsage: true,
    });
    const common = {
      model: provider.chatModel(c.model),
      messages: messages(c),
      maxOutputTokens: c.maxTokens,
      temperature: 0,
      maxRetries: 0,
      ...(c.extraBody ? { providerOptions: { server: c.extraBody as Record<string, never> } } : {}),
    };
    obs.reasoning = '';
    if (mode === 'non-stream') {
      const r = await generateText(common);
      obs.text = r.text;
      obs.reasoning = r.reasoningText ?? '';
      obs.finish = r.finishReason;
      obs.usage = { input: r.usage.inputTokens, output: r.usage.outputTokens };
      return;
    }
    const r = streamText({
      ...common,
      onError: ({ error }) => {
        obs.reported.push(errorText(error));
      },
    });
    let errorParts = 0;
    for await (const part of r.fullStream) {
      if (part.type === 'text-delta') {
        if (part.text) {
          obs.text += part.text;
          obs.pieces.push(performance.now());
        }
      } else if (part.type === 'reasoning-delta') obs.reasoning += part.text;
      else if (part.type === 'error') errorParts++;
    }
    // onError reports every error part; keep one line if it somehow did not.
    if (errorParts > 0 && obs.reported.length === 0) obs.reported.push(`${errorParts} error part(s) in fullStream`);
    obs.finish = await r.finishReason;
    const u = await r.usage;
    obs.usage = { input: u.inputTokens, output: u.outputTokens };
  },
};

// ---------------------------------------------------------------------------------------------------------
// LangChain: ChatOpenAI.stream() (chunks concatenated as applications do) and .invoke(), streaming off, so no
// token count is estimated (that path downloads a tiktoken table at run time); usage comes from the server.

const langchainDriver: ClientDriver = {
  id: 'langchain',
  title: 'LangChain ChatOpenAI',
  packages: ['@langchain/openai', '@langchain/core'],
  flavour: 'openai-chat',
  // @langchain/openai reads delta.reasoning_content into additional_kwargs; it ignores delta.reasoning.
  reasoningFields: ['reasoning_content'],
  finishMap: (w) => w,
  calls: { stream: 'ChatOpenAI.stream() chunks concatenated', 'non-stream': 'ChatOpenAI.invoke()' },
  async run(mode, c, obs) {
    const { ChatOpenAI } = await import('@langchain/openai');
    const model = new ChatOpenAI({
      model: c.model,
      apiKey: PLACEHOLDER_KEY,
      configuration: { baseURL: `${c.root}/v1`, fetch: c.fetch, logger: collectingLogger(obs), logLevel: 'warn' },
      maxTokens: c.maxTokens,
      temperature: 0,
      maxRetries: 0,
      // `streaming: false` would disable .stream() too (it sets disableStreaming): leave it unset.
      streamUsage: true,
      ...(c.extraBody ? { modelKwargs: c.extraBody } : {}),
    });
    const reasoningOf = (m: { additional_kwargs?: Obj }) => str(m.additional_kwargs?.reasoning_content);
    if (mode === 'non-stream') {
      const r = await model.invoke(messages(c));
      obs.text = typeof r.content === 'string' ? r.content : JSON.stringify(r.content);
      obs.reasoning = reasoningOf(r);
      obs.finish = str(r.response_metadata?.finish_reason) || undefined;
      if (r.usage_metadata)
        obs.usage = { input: r.usage_metadata.input_tokens, output: r.usage_metadata.output_tokens };
      return;
    }
    let agg: Awaited<ReturnType<typeof model.invoke>> | undefined;
    for await (const chunk of await model.stream(messages(c))) {
      const piece = typeof chunk.content === 'string' ? chunk.content : '';
      if (piece) obs.pieces.push(performance.now());
      agg = agg ? agg.concat(chunk) : chunk;
    }
    obs.text = agg === undefined ? '' : typeof agg.content === 'string' ? agg.content : JSON.stringify(agg.content);
    obs.reasoning = agg ? reasoningOf(agg) : '';
    obs.finish = agg ? str(agg.response_metadata?.finish_reason) || undefined : undefined;
    if (agg?.usage_metadata)
      obs.usage = { input: agg.usage_metadata.input_tokens, output: agg.usage_metadata.output_tokens };
  },
};

// ---------------------------------------------------------------------------------------------------------
// Anthropic SDK (Messages): messages.stream() helper with 'text'/'thinking'/'error' events, then finalMessage();
// messages.create().

const anthropicDriver: ClientDriver = {
  id: 'anthropic',
  title: 'Anthropic SDK',
  packages: ['@anthropic-ai/sdk'],
  flavour: 'anthropic-messages',
  reasoningFields: ['thinking'],
  finishMap: (w) => w,
  calls: { stream: "messages.stream() 'text' events, then finalMessage()", 'non-stream': 'messages.create()' },
  async run(mode, c, obs) {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic({
      baseURL: c.root,
      apiKey: PLACEHOLDER_KEY,
      fetch: c.fetch,
      maxRetries: 0,
      logger: collectingLogger(obs),
      logLevel: 'warn',
    });
    const params = { model: c.model, max_tokens: c.maxTokens, messages: messages(c), temperature: 0 };
    const take = (m: { content?: unknown; stop_reason?: unknown; usage?: unknown }) => {
      const blocks = Array.isArray(m.content) ? m.content.filter(isJsonObject) : [];
      obs.text = blocks
        .filter((b) => b.type === 'text')
        .map((b) => str(b.text))
        .join('');
      obs.reasoning = blocks
        .filter((b) => b.type === 'thinking')
        .map((b) => str(b.thinking))
        .join('');
      obs.finish = str(m.stop_reason) || undefined;
      const u = isJsonObject(m.usage) ? m.usage : undefined;
      if (u) obs.usage = { input: num(u.input_tokens), output: num(u.output_tokens) };
    };
    if (mode === 'non-stream') {
      take(await client.messages.create({ ...params, stream: false }));
      return;
    }
    const s = client.messages.stream(params);
    let streamed = '';
    s.on('text', (delta) => {
      if (delta) {
        streamed += delta;
        obs.pieces.push(performance.now());
      }
    });
    s.on('error', (e) => obs.reported.push(errorText(e)));
    take(await s.finalMessage());
    if (streamed !== obs.text)
      obs.reported.push(
        `finalMessage() text ${JSON.stringify(obs.text.slice(0, 80))} differs from the 'text' events ${JSON.stringify(streamed.slice(0, 80))}`,
      );
  },
};

// ---------------------------------------------------------------------------------------------------------
// ollama-js: chat({ stream: true }) iterated part by part, and chat({ stream: false }).

const ollamaDriver: ClientDriver = {
  id: 'ollama',
  title: 'ollama-js',
  packages: ['ollama'],
  flavour: 'ollama-native',
  reasoningFields: ['thinking'],
  finishMap: (w) => w,
  calls: { stream: 'chat({ stream: true }) iterated', 'non-stream': 'chat({ stream: false })' },
  async run(mode, c, obs) {
    const { Ollama } = await import('ollama');
    const client = new Ollama({ host: c.root, fetch: c.fetch });
    const params = { model: c.model, messages: messages(c), options: { num_predict: c.maxTokens, temperature: 0 } };
    const take = (p: { done_reason?: unknown; prompt_eval_count?: unknown; eval_count?: unknown }) => {
      obs.finish = str(p.done_reason) || undefined;
      const input = num(p.prompt_eval_count);
      const output = num(p.eval_count);
      if (input !== undefined || output !== undefined) obs.usage = { input, output };
    };
    if (mode === 'non-stream') {
      const r = await client.chat({ ...params, stream: false });
      obs.text = str(r.message?.content);
      obs.reasoning = str(r.message?.thinking);
      take(r);
      return;
    }
    obs.reasoning = '';
    for await (const part of await client.chat({ ...params, stream: true })) {
      const piece = str(part.message?.content);
      if (piece) {
        obs.text += piece;
        obs.pieces.push(performance.now());
      }
      obs.reasoning += str(part.message?.thinking);
      if (part.done) take(part);
    }
  },
};

export const DRIVERS: readonly ClientDriver[] = [
  openaiDriver,
  aiSdkDriver,
  langchainDriver,
  anthropicDriver,
  ollamaDriver,
];

/**
 * The installed version of a package, found as Node resolves it from the suite's folder: its own node_modules in a
 * checkout, the user's (hoisted) node_modules when installed as a package. Read from its package.json (some packages
 * do not export it).
 */
export function installedVersion(pkg: string): string | undefined {
  for (let dir = ROOT, i = 0; i < 64; dir = dirname(dir), i++) {
    try {
      return (JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')) as { version?: string })
        .version;
    } catch {
      if (dirname(dir) === dir) break;
    }
  }
  return undefined;
}

/**
 * The version the suite is tested with (devDependencies, an exact version; a published package keeps them in its
 * package.json), else the peer range's newest major: what the install command names.
 */
function pinnedVersion(pkg: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    const range = manifest.peerDependencies?.[pkg];
    return manifest.devDependencies?.[pkg] ?? range?.split('||').at(-1)?.trim().replace(/^\^/, '');
  } catch {
    return undefined;
  }
}

/** The client's packages that are not installed, with the command that installs them; undefined when all are. */
export function missingClient(d: ClientDriver): { packages: string[]; install: string } | undefined {
  const packages = d.packages.filter((p) => !installedVersion(p));
  if (!packages.length) return undefined;
  return { packages, install: `npm install ${packages.map((p) => `${p}@${pinnedVersion(p) ?? 'latest'}`).join(' ')}` };
}

/** "openai 6.49.0", "ai 6.0.326 + @ai-sdk/openai-compatible 2.0.92". */
export function clientLabel(d: ClientDriver): string {
  return d.packages.map((p) => `${p} ${installedVersion(p) ?? '(not installed)'}`).join(' + ');
}
