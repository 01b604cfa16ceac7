// Family `tools`: tool calls, the request feature agents and coding tools depend on and where servers break most:
// deltas without an id or index, arguments that are not JSON, a 500 where a 4xx belongs, an id that is "".
// References: OpenAI API reference, Chat Completions (https://platform.openai.com/docs/api-reference/chat/create):
// `tools`, `tool_choice` ("none" | "auto" | "required" | {"type": "function", "function": {"name"}}),
// `parallel_tool_calls`, message.tool_calls[] {id, type "function", function {name, arguments: a JSON string}},
// the chunk's delta.tool_calls[] {index, id, type, function}, finish_reason "tool_calls", role "tool" messages with
// tool_call_id; Anthropic Messages tool use (https://docs.anthropic.com/en/api/messages): tool_use blocks
// {id, name, input}, stop_reason "tool_use", streamed input_json_delta.
//
// The tools offered have bounded parameters (enums only), so even a random-weight model under a grammar finishes a
// call within the token budget. Capability `tools`: declared, or discovered by the probe request of tools.supported.
// Recordings are shared between checks (one request each, memoized per run and server).
//
// The judges are pure functions in lib/grading/tools.ts; this file sends the requests and declares the checks.

import { anthropicAnswer, anthropicStreamedToolUses, chatAnswer, streamedToolCalls } from '../lib/decode/tool-calls.ts';
import { type Exchange, generationBody, send, uniquePrompt } from '../lib/exchange/exchange.ts';
import { sharedValue } from '../lib/exchange/recordings.ts';
import { blockedOn, requestPrecondition } from '../lib/grading/preconditions.ts';
import {
  isVerdict,
  judgeAnthropicStream,
  judgeAnthropicToolUse,
  judgeArgumentsValid,
  judgeAutoChoice,
  judgeDescriptionOptional,
  judgeFinishReason,
  judgeFollowUp,
  judgeNamedChoice,
  judgeNoneChoice,
  judgeParallelFalse,
  judgeParallelIndexes,
  judgeRequiredCall,
  judgeStreamArguments,
  judgeStreamDeltas,
  judgeStreamFinish,
  judgeStreamIncremental,
  judgeTruncation,
  type RequiredAnswer,
  requiredAnswer,
  TIME_PARAMS,
  TOOL_BUDGET,
  WEATHER_PARAMS,
} from '../lib/grading/tools.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { ApiFlavour, Verdict } from '../lib/model/types.ts';
import { inconclusive } from '../lib/model/verdict.ts';
import { classifyAnswer, featureGate, judgeInvalidCases, probeCheck, unanswered } from '../lib/server/feature-probe.ts';
import { faultProof, type Proof, passProof, skipProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'tools',
  order: 70,
  what: 'tool calls: `tool_choice` required / named / auto / none, ids, arguments that parse and validate (ajv), finish_reason, streamed deltas (index, id, name, fragments), parallel calls, `parallel_tool_calls: false`, the `role: "tool"` follow-up, truncation ending "length", 4xx for invalid tools, Anthropic `tool_use`',
};

const OPENAI = 'OpenAI API reference, Chat Completions (https://platform.openai.com/docs/api-reference/chat/create)';
const ANTHROPIC = 'Anthropic Messages API, tool use (https://docs.anthropic.com/en/api/messages)';

// ---------------------------------------------------------------------------------------------------------------
// The tools we offer (their parameters and the token budget are in lib/grading/tools.ts, which judges by them).

const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', description: 'Get the current weather in a city.', parameters: WEATHER_PARAMS },
};
const TIME = {
  type: 'function',
  function: { name: 'get_time', description: 'Get the local time in a city.', parameters: TIME_PARAMS },
};
const ANTHROPIC_WEATHER = {
  name: 'get_weather',
  description: 'Get the current weather in a city.',
  input_schema: WEATHER_PARAMS,
};

const WEATHER_PROMPT = 'What is the weather in Paris right now, in celsius? Use the get_weather tool.';
const BOTH_PROMPT = 'What are the weather (celsius) and the local time (24h) in Tokyo? Call get_weather and get_time.';

function toolRequest(
  ctx: CheckContext,
  o: {
    prompt: string;
    tools: unknown[];
    choice?: unknown;
    stream: boolean;
    maxTokens?: number;
    extra?: Record<string, unknown>;
  },
) {
  return generationBody(ctx, 'openai-chat', {
    prompt: uniquePrompt(ctx, o.prompt),
    maxTokens: o.maxTokens ?? TOOL_BUDGET,
    stream: o.stream,
    extra: { tools: o.tools, ...(o.choice !== undefined ? { tool_choice: o.choice } : {}), ...o.extra },
  });
}

/** One request per run and server, shared by the checks that read it. */
function once(
  ctx: CheckContext,
  key: string,
  flavour: ApiFlavour,
  body: () => Record<string, unknown>,
): Promise<Exchange> {
  return sharedValue(
    ctx,
    `tools/${key}`,
    () => send(ctx, flavour, body()),
    (x) => [x.rec],
  );
}

/** The probe: one tool, tool_choice "auto", not streamed (Messages when the profile has no chat API). */
function probe(ctx: CheckContext): Promise<Exchange> {
  if (!ctx.profile.apis.includes('openai-chat') && ctx.profile.apis.includes('anthropic-messages')) {
    return once(ctx, 'probe-anthropic', 'anthropic-messages', () => anthropicRequest(ctx, { type: 'auto' }, false));
  }
  return once(ctx, 'probe', 'openai-chat', () =>
    toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [WEATHER], choice: 'auto', stream: false }),
  );
}

const required = (ctx: CheckContext) =>
  once(ctx, 'required', 'openai-chat', () =>
    toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [WEATHER], choice: 'required', stream: false }),
  );
const streamed = (ctx: CheckContext) =>
  once(ctx, 'stream', 'openai-chat', () =>
    toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [WEATHER], choice: 'required', stream: true }),
  );
const parallelStream = (ctx: CheckContext) =>
  once(ctx, 'parallel-stream', 'openai-chat', () =>
    toolRequest(ctx, { prompt: BOTH_PROMPT, tools: [WEATHER, TIME], choice: 'required', stream: true }),
  );
const parallelAllowed = (ctx: CheckContext) =>
  once(ctx, 'parallel', 'openai-chat', () =>
    toolRequest(ctx, { prompt: BOTH_PROMPT, tools: [WEATHER, TIME], choice: 'required', stream: false }),
  );

function anthropicRequest(ctx: CheckContext, choice: unknown, stream: boolean) {
  return generationBody(ctx, 'anthropic-messages', {
    prompt: uniquePrompt(ctx, WEATHER_PROMPT),
    maxTokens: TOOL_BUDGET,
    stream,
    extra: { tools: [ANTHROPIC_WEATHER], tool_choice: choice },
  });
}

/** Checks other than the probe check run only where the capability is declared or the probe got a 200. */
function gated(run: (ctx: CheckContext) => Promise<Verdict>): (ctx: CheckContext) => Promise<Verdict> {
  return async (ctx) => (await featureGate(ctx, 'tools', 'tools.supported', () => probe(ctx))) ?? run(ctx);
}

/**
 * A streamed tools request that failed is graded once, by tools.stream-deltas: the other stream checks are inconclusive,
 * blocked by it (their `dependsOn`, lib/check/blocked.ts), never its failure again.
 */
function streamUnusable(x: Exchange, what: string): Verdict | undefined {
  const a = classifyAnswer(x);
  if (a.kind === 'broken')
    return blockedOn(
      inconclusive(`${what} failed with ${a.detail}: nothing to judge`),
      requestPrecondition(x.rec, { mayReport: false }),
    );
  return unanswered(x, what, '');
}

const streamedCalls = (x: Exchange) => streamedToolCalls(x.events?.chunks ?? []);

/** The non-streamed answer under "required", or the verdict when there is nothing to judge. */
async function requiredCalls(ctx: CheckContext): Promise<RequiredAnswer | Verdict> {
  const x = await required(ctx);
  const bad = unanswered(
    x,
    'a tool_choice "required" request',
    'A chat request with tools and tool_choice "required" MUST be answered.',
  );
  return bad ?? requiredAnswer(chatAnswer(x.json), x.rec);
}

const base = { requires: ['openai-chat', 'tools'] as CheckDef['requires'], timeoutMs: 180_000 }; // two requests of up to 256 tokens at 3 tok/s

export const checks: CheckDef[] = [
  {
    ...base,
    requires: ['tools'],
    id: 'tools.supported',
    title: 'a request with tools is answered (200), or refused with a 4xx — never a 5xx',
    level: 'MUST',
    rationale:
      'A client cannot tell "no tool support" from "server broken" when a tools request gets a 500; a 4xx says it honestly.',
    reference: `${OPENAI}: tools; RFC 9110 §15.5 (4xx: the client's request cannot be served) / §15.6 (5xx: the server failed a valid request)`,
    run: (ctx) =>
      probeCheck(
        ctx,
        'tools',
        () => probe(ctx),
        'the probe (one tool with description and JSON Schema parameters, tool_choice "auto", not streamed)',
        'A chat request with tools',
      ),
  },
  {
    ...base,
    id: 'tools.required-call',
    title:
      'tool_choice "required": message.tool_calls[] with a non-empty id, type "function" and an offered function name',
    level: 'MUST',
    rationale:
      'Agents answer each call by its id (tool_call_id) and dispatch by name; an empty id or a missing type breaks the follow-up.',
    reference: `${OPENAI}: tool_choice "required" (the model must call one or more tools); message.tool_calls[] {id, type "function", function {name, arguments}}`,
    run: gated(async (ctx) => {
      const r = await requiredCalls(ctx);
      return isVerdict(r) ? r : judgeRequiredCall(r);
    }),
  },
  {
    ...base,
    id: 'tools.arguments-valid',
    title: 'tool-call arguments are a JSON string that validates against the parameters schema',
    level: 'MUST',
    rationale:
      'Clients JSON.parse the arguments and pass them to a function; Python-style or schema-breaking arguments crash the agent or call it wrongly.',
    reference: `${OPENAI}: function.arguments "the arguments to call the function with, as generated by the model in JSON format"; tools[].function.parameters (JSON Schema)`,
    run: gated(async (ctx) => {
      const r = await requiredCalls(ctx);
      return isVerdict(r) ? r : judgeArgumentsValid(r);
    }),
  },
  {
    ...base,
    id: 'tools.finish-reason',
    title: 'finish_reason is "tool_calls" when the model called tools',
    level: 'MUST',
    rationale:
      'Agent loops branch on finish_reason: "stop" after a call makes them show an empty answer instead of running the tool.',
    reference: `${OPENAI}: finish_reason "tool_calls" if the model called a tool`,
    run: gated(async (ctx) => {
      const r = await requiredCalls(ctx);
      return isVerdict(r) ? r : judgeFinishReason(r);
    }),
  },
  {
    ...base,
    id: 'tools.named-choice',
    title: 'a named tool_choice calls exactly that function',
    level: 'MUST',
    rationale:
      'Clients force a function to get structured data from it; a server that ignores the name runs the wrong tool.',
    reference: `${OPENAI}: tool_choice {"type": "function", "function": {"name": "my_function"}} forces the model to call that tool; finish_reason "tool_calls" (OpenAI itself ends a forced call with "stop", so both are accepted)`,
    run: gated(async (ctx) => {
      const x = await once(ctx, 'named', 'openai-chat', () =>
        toolRequest(ctx, {
          prompt: BOTH_PROMPT,
          tools: [WEATHER, TIME],
          choice: { type: 'function', function: { name: 'get_time' } },
          stream: false,
        }),
      );
      const bad = unanswered(
        x,
        'a named tool_choice request',
        'A chat request with a named tool_choice MUST be answered.',
      );
      return bad ?? judgeNamedChoice(chatAnswer(x.json), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.auto-choice',
    title: 'tool_choice "auto": either text or well-formed tool_calls, never a call written as text',
    level: 'MUST',
    rationale:
      'A server without a tool-call parser returns the call as raw JSON or <tool_call> markup in content: the agent shows it to the user instead of running it.',
    reference: `${OPENAI}: tool_choice "auto" means the model can pick between generating a message or calling one or more tools; message.tool_calls; finish_reason "tool_calls"`,
    run: gated(async (ctx) => {
      const x = await probe(ctx);
      const bad = unanswered(x, 'the tool_choice "auto" request', 'A chat request with tools MUST be answered.');
      return bad ?? judgeAutoChoice(chatAnswer(x.json), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.none-choice',
    title: 'tool_choice "none": a text answer, no tool_calls',
    level: 'MUST',
    rationale: 'Clients send "none" to get the final answer after tool results; a call there loops the agent forever.',
    reference: `${OPENAI}: tool_choice "none" means the model will not call any tool and instead generates a message`,
    run: gated(async (ctx) => {
      const x = await once(ctx, 'none', 'openai-chat', () =>
        toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [WEATHER], choice: 'none', stream: false, maxTokens: 16 }),
      );
      const bad = unanswered(
        x,
        'a tool_choice "none" request',
        'A chat request with tool_choice "none" MUST be answered.',
      );
      return bad ?? judgeNoneChoice(chatAnswer(x.json), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.stream-deltas',
    title:
      'streamed tool calls: the first delta of each call carries index, id, type and function.name; later deltas keep its index',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Streaming clients (the OpenAI SDKs, LangChain) assemble calls by index and key them by id: a delta without them is dropped or merged into the wrong call.',
    reference: `${OPENAI}: chat completion chunk, choices[].delta.tool_calls[] {index, id, type "function", function {name, arguments}}`,
    run: gated(async (ctx) => {
      const x = await streamed(ctx);
      const bad = unanswered(
        x,
        'a streamed tool_choice "required" request',
        'A streamed chat request with tools MUST be answered (as a stream), or refused with a 4xx; never a 5xx.',
      );
      // A server that serves no streamed chat request at all fails once for it (lib/check/blocked.ts).
      if (bad) return bad.outcome === 'fail' ? blockedIfUnserved(bad, [x.rec]) : bad;
      return judgeStreamDeltas(streamedCalls(x), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.stream-arguments',
    title: 'streamed argument fragments concatenate to a JSON string that validates',
    level: 'MUST',
    dependsOn: ['tools.stream-deltas'],
    rationale:
      'Clients concatenate the fragments and parse them once the stream ends; a fragment lost, repeated or reformatted breaks the call.',
    reference: `${OPENAI}: chat completion chunk, delta.tool_calls[].function.arguments (fragments of the JSON arguments)`,
    run: gated(async (ctx) => {
      const x = await streamed(ctx);
      return streamUnusable(x, 'the streamed tool_choice "required" request') ?? judgeStreamArguments(streamedCalls(x));
    }),
  },
  {
    ...base,
    id: 'tools.stream-finish',
    title: 'a streamed tool call ends with exactly one finish_reason, "tool_calls"',
    level: 'MUST',
    dependsOn: ['tools.stream-deltas'],
    rationale:
      'Streaming agents decide to run the tools on finish_reason "tool_calls"; none, two, or "stop" leaves them waiting or showing nothing.',
    reference: `${OPENAI}: chat completion chunk, finish_reason "tool_calls" if the model called a tool (set on the last chunk of the choice)`,
    run: gated(async (ctx) => {
      const x = await streamed(ctx);
      return streamUnusable(x, 'the streamed tool_choice "required" request') ?? judgeStreamFinish(streamedCalls(x));
    }),
  },
  {
    ...base,
    id: 'tools.stream-incremental',
    title: 'streamed tool-call arguments are spread over several deltas (INFO: whole at the end is allowed)',
    level: 'INFO',
    dependsOn: ['tools.stream-deltas'],
    rationale:
      'Arguments streamed as generated let a client show progress; several servers send the call whole at the end, which works but streams nothing.',
    reference: `${OPENAI}: chat completion chunk (delta.tool_calls[].function.arguments may arrive in fragments); docs/servers.md "Burst delivery" (mlx-omni-server, oMLX send calls whole)`,
    run: gated(async (ctx) => {
      const x = await streamed(ctx);
      return (
        streamUnusable(x, 'the streamed tool_choice "required" request') ?? judgeStreamIncremental(streamedCalls(x))
      );
    }),
  },
  {
    ...base,
    id: 'tools.parallel-indexes',
    title: 'several calls in one turn keep distinct indexes (streamed) and distinct ids',
    level: 'MUST',
    rationale:
      'Clients assemble streamed calls by index: two calls under one index merge into one call with garbage arguments (whether a model makes two calls is its choice).',
    reference: `${OPENAI}: parallel_tool_calls (default true); delta.tool_calls[].index; message.tool_calls[].id`,
    run: gated(async (ctx) => {
      const x = await parallelStream(ctx);
      return streamUnusable(x, 'the streamed two-tool request') ?? judgeParallelIndexes(streamedCalls(x), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.parallel-false',
    title: 'parallel_tool_calls: false gives at most one call per turn',
    level: 'MUST',
    rationale:
      'Agents that run tools in order turn parallel calls off; two calls anyway run tools the agent meant to sequence.',
    reference: `${OPENAI}: parallel_tool_calls "whether to enable parallel function calling during tool use" (default true)`,
    run: gated(async (ctx) => {
      const allowed = await parallelAllowed(ctx);
      const x = await once(ctx, 'parallel-false', 'openai-chat', () =>
        toolRequest(ctx, {
          prompt: BOTH_PROMPT,
          tools: [WEATHER, TIME],
          choice: 'required',
          stream: false,
          extra: { parallel_tool_calls: false },
        }),
      );
      const bad = unanswered(
        x,
        'a request with parallel_tool_calls: false',
        'A chat request with parallel_tool_calls: false MUST be answered, or refused with a 4xx.',
      );
      if (bad) return bad;
      const on = classifyAnswer(allowed).kind === 'ok' ? chatAnswer(allowed.json).calls.length : undefined;
      return judgeParallelFalse(chatAnswer(x.json), on, x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.follow-up',
    title:
      'the follow-up (assistant tool_calls + a role "tool" message with its tool_call_id) is accepted and answered',
    level: 'MUST',
    rationale:
      'Every agent turn after a call sends the tool result back; a server that rejects or crashes on it can run tools but never use their results.',
    reference: `${OPENAI}: messages — assistant message with tool_calls; tool message {role "tool", content, tool_call_id}`,
    run: gated(async (ctx) => {
      const callId = `call_conformance_${ctx.nonce().replace(/[^a-zA-Z0-9]/g, '')}`;
      const body = toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [WEATHER], stream: false, maxTokens: 16 });
      body.messages = [
        ...(body.messages as unknown[]),
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: callId,
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: callId, content: '{"temperature": 21, "sky": "clear"}' },
      ];
      const x = await send(ctx, 'openai-chat', body);
      return judgeFollowUp(classifyAnswer(x), chatAnswer(x.json), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.truncation-length',
    title: 'a tool call cut by max_tokens ends with finish_reason "length", not "tool_calls"',
    level: 'MUST',
    rationale:
      'A client that sees "tool_calls" runs the tool with the arguments it got; cut arguments are not JSON and crash it.',
    reference: `${OPENAI}: finish_reason "length" if the maximum number of tokens specified in the request was reached; "tool_calls" if the model called a tool`,
    run: gated(async (ctx) => {
      const full = await required(ctx);
      const n =
        classifyAnswer(full).kind === 'ok'
          ? (full.json as { usage?: { completion_tokens?: unknown } })?.usage?.completion_tokens
          : undefined;
      // Cut three tokens before the end of the full call: inside its arguments wherever a server puts them.
      const limit = typeof n === 'number' && n > 4 ? n - 3 : 8;
      const x = await once(ctx, 'cut', 'openai-chat', () =>
        toolRequest(ctx, {
          prompt: WEATHER_PROMPT,
          tools: [WEATHER],
          choice: 'required',
          stream: false,
          maxTokens: limit,
        }),
      );
      const bad = unanswered(
        x,
        `a tool_choice "required" request with max_tokens ${limit}`,
        'A chat request with tools and a small max_tokens MUST be answered.',
      );
      if (bad) return bad;
      const used = (x.json as { usage?: { completion_tokens?: unknown } })?.usage?.completion_tokens;
      return judgeTruncation(chatAnswer(x.json), { limit, fullCallTokens: n, completionTokens: used }, x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.description-optional',
    title: 'a tool without a description is accepted',
    level: 'MUST',
    rationale:
      'Many clients send tools without descriptions (the field is optional); a server that fails on them breaks those clients outright.',
    reference: `${OPENAI}: tools[].function.description is optional ("a description of what the function does")`,
    run: gated(async (ctx) => {
      const bare = { type: 'function', function: { name: 'get_weather', parameters: WEATHER_PARAMS } };
      const x = await send(
        ctx,
        'openai-chat',
        toolRequest(ctx, { prompt: WEATHER_PROMPT, tools: [bare], choice: 'required', stream: false }),
      );
      return judgeDescriptionOptional(classifyAnswer(x), x.rec);
    }),
  },
  {
    ...base,
    id: 'tools.invalid-4xx',
    title: 'invalid tools / tool_choice get a 4xx, never a 5xx',
    level: 'MUST',
    rationale:
      'A 500 for a client mistake reads as a server outage: clients retry it, monitoring pages someone, and the mistake is never shown.',
    reference: `${OPENAI}: tools (array of {type "function", function {name, …}}), tool_choice (a named function must be among the tools); RFC 9110 §15.5 / §15.6`,
    run: gated(async (ctx) => {
      const cases: Array<{ label: string; extra: Record<string, unknown> }> = [
        { label: 'tools is a string', extra: { tools: 'get_weather' } },
        {
          label: 'a tool without function.name',
          extra: { tools: [{ type: 'function', function: { description: 'x', parameters: WEATHER_PARAMS } }] },
        },
        {
          label: 'tool_choice names a function not among the tools',
          extra: { tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'no_such_function' } } },
        },
      ];
      const results = [];
      for (const c of cases) {
        const body = generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, WEATHER_PROMPT),
          maxTokens: 16,
          stream: false,
          extra: c.extra,
        });
        results.push({ label: c.label, x: await send(ctx, 'openai-chat', body) });
      }
      return judgeInvalidCases(
        results,
        'An invalid tools or tool_choice value MUST get a 4xx with an error object, not a 5xx.',
      );
    }),
  },
  {
    ...base,
    requires: ['anthropic-messages', 'tools'],
    id: 'tools.anthropic-tool-use',
    title:
      'Messages: tool_choice "any" gives tool_use blocks (id, name, input that validates) and stop_reason "tool_use"',
    level: 'MUST',
    rationale:
      'Claude clients (Claude Code, the Anthropic SDKs) run tool_use blocks by id and name; a missing id or a wrong stop_reason stalls them.',
    reference: `${ANTHROPIC}: tools [{name, description, input_schema}], tool_choice {"type": "any"}; content [{type "tool_use", id, name, input}]; stop_reason "tool_use"`,
    run: gated(async (ctx) => {
      const x = await once(ctx, 'anthropic', 'anthropic-messages', () => anthropicRequest(ctx, { type: 'any' }, false));
      const bad = unanswered(
        x,
        'a Messages request with tools',
        'A Messages request with tools MUST be answered, or refused with a 4xx.',
      );
      return bad ?? judgeAnthropicToolUse(anthropicAnswer(x.json), x.rec);
    }),
  },
  {
    ...base,
    requires: ['anthropic-messages', 'tools'],
    id: 'tools.anthropic-stream',
    title:
      'Messages stream: a tool_use content_block_start (id, name), input_json_delta fragments that form valid JSON, stop_reason "tool_use"',
    level: 'MUST',
    rationale:
      'Claude clients build tool input from partial_json fragments and run it on stop_reason "tool_use"; broken fragments or a wrong stop reason stall the agent.',
    reference: `${ANTHROPIC}: streaming — content_block_start {content_block {type "tool_use", id, name, input {}}}, content_block_delta {delta {type "input_json_delta", partial_json}}, message_delta {stop_reason "tool_use"}`,
    run: gated(async (ctx) => {
      const x = await once(ctx, 'anthropic-stream', 'anthropic-messages', () =>
        anthropicRequest(ctx, { type: 'any' }, true),
      );
      const bad = unanswered(
        x,
        'a streamed Messages request with tools',
        'A streamed Messages request with tools MUST be answered, or refused with a 4xx.',
      );
      return bad ?? judgeAnthropicStream(anthropicStreamedToolUses(x.events?.chunks ?? []), x.rec);
    }),
  },
];

const skipped = skipProof;

export const proofs: Proof[] = [
  passProof('tools.supported', { messageIncludes: ['capability "tools" supported', 'got HTTP 200'] }),
  faultProof('tools.supported', 'tools-unsupported-500', [
    'never a 5xx',
    'HTTP 500',
    'tools param requires --jinja flag',
  ]),
  skipped('tools.supported', 'tools-unsupported-400', 'capability "tools" not supported'),
  passProof('tools.supported', {
    profile: { capabilities: { tools: false } },
    expect: 'skip',
    messageIncludes: ['declares capability "tools" false'],
  }),
  faultProof('tools.supported', 'tools-unsupported-400', ['declares capability "tools"', 'HTTP 400'], {
    profile: { capabilities: { tools: true } },
  }),
  passProof('tools.required-call', { messageIncludes: ['1 call(s) ["get_weather"]', 'ids ["call_'] }),
  faultProof('tools.required-call', 'tools-id-empty', ['id is "" (an empty string)']),
  skipped('tools.required-call', 'tools-unsupported-400', 'capability "tools" not supported'),
  skipped('tools.required-call', 'tools-unsupported-500', 'graded once in tools.supported'),
  passProof('tools.arguments-valid', { messageIncludes: ['arguments valid: {"city":'] }),
  faultProof('tools.arguments-valid', 'tools-args-not-json', ['arguments are not JSON', "{'city'"]),
  faultProof('tools.arguments-valid', 'tools-args-schema-mismatch', [
    "must have required property 'city'",
    'unexpected',
  ]),
  passProof('tools.finish-reason', { messageIncludes: ['finish_reason "tool_calls" after 1 call(s)'] }),
  faultProof('tools.finish-reason', 'tools-finish-stop', [
    'finish_reason "stop"',
    'MUST end with finish_reason "tool_calls"',
  ]),
  passProof('tools.named-choice', { messageIncludes: ['named choice honoured: ["get_time"]'] }),
  faultProof('tools.named-choice', 'tools-ignore-named', ['called ["get_weather"]', 'the name was ignored']),
  passProof('tools.auto-choice', { messageIncludes: ['called ["get_weather"], finish_reason "tool_calls"'] }),
  faultProof('tools.auto-choice', 'tools-auto-as-content', ['came as text in content']),
  passProof('tools.none-choice', { messageIncludes: ['text answer'] }),
  faultProof('tools.none-choice', 'tools-ignore-none', ['MUST NOT call a tool', '1 tool call(s)']),
  passProof('tools.stream-deltas', { messageIncludes: ['streamed call(s) ["get_weather"]', 'ids ["call_'] }),
  faultProof('tools.stream-deltas', 'tools-delta-no-id', ['its first delta lacks id']),
  faultProof('tools.stream-deltas', 'tools-delta-no-index', ['without an integer index']),
  faultProof('tools.stream-deltas', 'tools-id-empty', ['lacks id (empty string)']),
  faultProof('tools.stream-deltas', 'tools-stream-500', ['HTTP 500: Cannot use tools with stream', 'never a 5xx']),
  passProof('tools.stream-arguments', { messageIncludes: ['arguments valid after concatenating'] }),
  faultProof('tools.stream-arguments', 'tools-args-not-json', ['arguments are not JSON']),
  ...['tools.stream-arguments', 'tools.stream-finish', 'tools.stream-incremental'].map((id) =>
    faultProof(id, 'tools-stream-500', ['blocked by tools.stream-deltas', 'HTTP 500'], {
      expect: 'inconclusive',
      raw: 'inconclusive',
    }),
  ),
  passProof('tools.stream-finish', { messageIncludes: ['one finish_reason, "tool_calls"'] }),
  faultProof('tools.stream-finish', 'tools-finish-stop', ['finish_reason(s) ["stop"]']),
  passProof('tools.stream-incremental', { messageIncludes: ['spread over'] }),
  passProof('tools.stream-incremental', { faults: ['tools-stream-args-whole'], messageIncludes: ['arrived whole'] }),
  passProof('tools.parallel-indexes', {
    messageIncludes: ['2 calls ["get_weather","get_time"] under indexes [0,1] with distinct ids'],
  }),
  faultProof('tools.parallel-indexes', 'tools-parallel-same-index', ['were merged', 'changes id']),
  passProof('tools.parallel-false', { messageIncludes: ['1 with parallel_tool_calls: false'] }),
  faultProof('tools.parallel-false', 'tools-ignore-parallel-false', ['at most one tool call per turn', '2 calls']),
  passProof('tools.follow-up', { messageIncludes: ['answered: text'] }),
  faultProof('tools.follow-up', 'tools-follow-up-500', ['HTTP 500: Unsupported message role: tool']),
  passProof('tools.truncation-length', { messageIncludes: ['finish_reason "length" at max_tokens'] }),
  faultProof('tools.truncation-length', 'tools-truncated-finish-tool-calls', [
    'never "tool_calls"',
    'finish_reason "tool_calls"',
    'arguments not JSON',
  ]),
  passProof('tools.description-optional', { messageIncludes: ['accepted (HTTP 200)'] }),
  faultProof('tools.description-optional', 'tools-description-required', [
    "HTTP 500: Failed to parse tools: key 'description' not found",
  ]),
  passProof('tools.invalid-4xx', { messageIncludes: ['every invalid request refused', 'HTTP 400'] }),
  faultProof('tools.invalid-4xx', 'tools-invalid-500', ['3 of 3 broken', 'HTTP 500']),
  passProof('tools.anthropic-tool-use', { messageIncludes: ['tool_use block(s), stop_reason "tool_use"'] }),
  faultProof('tools.anthropic-tool-use', 'tools-anthropic-stop-reason', ['stop_reason "end_turn"']),
  faultProof('tools.anthropic-tool-use', 'tools-args-schema-mismatch', [
    "input: (root) must have required property 'city'",
  ]),
  passProof('tools.anthropic-stream', { messageIncludes: ['streamed tool_use block(s)', 'stop_reason "tool_use"'] }),
  faultProof('tools.anthropic-stream', 'tools-anthropic-stop-reason', ['stop_reason "end_turn"']),
  faultProof('tools.anthropic-stream', 'tools-args-not-json', ['partial_json: arguments are not JSON']),
];
