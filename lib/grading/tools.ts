// Judges of the tools family (suites/tools.ts): pure functions from the decoded answer (lib/decode/tool-calls.ts) and
// its recording to a Verdict, so test/tools-grading.test.ts can feed them hand-written answers. The suite sends the
// requests and stops at an unanswered one (lib/server/feature-probe.ts); everything after that is judged here.
//
// References: OpenAI API reference, Chat Completions (message.tool_calls[], delta.tool_calls[], finish_reason
// "tool_calls", tool_choice, parallel_tool_calls); Anthropic Messages tool use (tool_use blocks, input_json_delta,
// stop_reason "tool_use").

import { jsonPrefix } from '../decode/json-prefix.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import {
  type AnthropicAnswer,
  type anthropicStreamedToolUses,
  type ChatAnswer,
  callShapeProblems,
  judgeArguments,
  judgeValue,
  type StreamedCalls,
  type ToolCall,
  toolUseShapeProblems,
} from '../decode/tool-calls.ts';
import { bodyText } from '../http/recorder.ts';
import type { Recording, Verdict } from '../model/types.ts';
import { fail, inconclusive, pass } from '../model/verdict.ts';

// ---------------------------------------------------------------------------------------------------------------
// What the family offers and judges against: bounded parameters (enums), so every call is short.

const CITY = { type: 'string', enum: ['Paris', 'Tokyo', 'Lima'] };
export const WEATHER_PARAMS = {
  type: 'object',
  properties: { city: CITY, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};
export const TIME_PARAMS = {
  type: 'object',
  properties: { city: CITY, format: { type: 'string', enum: ['12h', '24h'] } },
  required: ['city', 'format'],
  additionalProperties: false,
};
/** The parameters schema of each offered function, by name. */
const TOOL_PARAMS: Record<string, unknown> = { get_weather: WEATHER_PARAMS, get_time: TIME_PARAMS };

/** max_tokens of a tool request: llama-server b4747 spends 54–67 tokens on one such call; two fit with room. */
export const TOOL_BUDGET = 256;

/** How a request was answered (lib/server/feature-probe.ts classifyAnswer). */
type Answered = { kind: 'ok' } | { kind: 'refused' | 'broken' | 'budget'; detail: string };

type AnthropicStreamed = ReturnType<typeof anthropicStreamedToolUses>;

const names = (calls: readonly ToolCall[]) => JSON.stringify(calls.map((c) => c.name));
const excerpt = (rec: Recording) => escapeBytes(bodyText(rec), 400);
/** Cut by max_tokens: the verdict on what was written is inconclusive, never a failure of its JSON. */
const cut = (finish: unknown) => finish === 'length';

export const isVerdict = (v: unknown): v is Verdict => typeof v === 'object' && v !== null && 'outcome' in v;

/** Every problem of the calls of one answer: envelope (id, type, name) and arguments (JSON, schema). */
function callProblems(calls: readonly ToolCall[], offered: readonly string[], what: 'shape' | 'arguments'): string[] {
  return calls.flatMap((c, i) => {
    const label = `tool_calls[${i}] (${JSON.stringify(c.name)})`;
    if (what === 'shape') return callShapeProblems(c, offered, label);
    const schema = typeof c.name === 'string' ? TOOL_PARAMS[c.name] : undefined;
    if (!schema) return [];
    const v = judgeArguments(c.arguments, schema);
    return v.state === 'valid'
      ? []
      : v.problems.map((p) => `${label}: ${p} — arguments ${escapeBytes(String(c.arguments), 120)}`);
  });
}

/** A tool call written as text: JSON or <tool_call> markup in content naming an offered function. */
function rawCallInText(content: unknown, offered: readonly string[]): string[] {
  if (typeof content !== 'string') return [];
  const t = content.trim();
  const named = offered.find((n) => t.includes(n));
  if (!named) return [];
  if (/<\/?tool_call>|"tool_calls?"\s*:|"arguments"\s*:|"parameters"\s*:/.test(t) || /^[{[]/.test(t)) {
    return [`the call to ${named} came as text in content, not as message.tool_calls: ${escapeBytes(t, 160)}`];
  }
  return [];
}

// ---------------------------------------------------------------------------------------------------------------
// tool_choice "required", not streamed: one answer read by three checks

/** The calls of an answer under tool_choice "required", with what they are judged beside. */
export interface RequiredAnswer {
  rec: Recording;
  calls: ToolCall[];
  finish: unknown;
  content: unknown;
}

/** A non-streamed answer under "required": the calls, or the verdict when there is nothing to judge. */
export function requiredAnswer(a: ChatAnswer, rec: Recording): RequiredAnswer | Verdict {
  if (a.problem)
    return fail({
      requirement: 'The answer MUST be a chat.completion with choices[0].message.',
      expected: 'choices[0].message with tool_calls',
      actual: a.problem,
      bytes: excerpt(rec),
    });
  if (a.calls.length === 0 && cut(a.finishReason))
    return inconclusive(
      `max_tokens ${TOOL_BUDGET} ran out before the call was complete (finish_reason "length", content ${escapeBytes(String(a.content), 120)})`,
    );
  return { rec, calls: a.calls, finish: a.finishReason, content: a.content };
}

/** tools.required-call: tool_calls with a non-empty id, type "function" and an offered name. */
export function judgeRequiredCall(r: RequiredAnswer): Verdict {
  const problems =
    r.calls.length === 0
      ? [
          `no tool_calls at all (content ${escapeBytes(String(r.content), 160)}, finish_reason ${JSON.stringify(r.finish)})`,
        ]
      : callProblems(r.calls, ['get_weather'], 'shape');
  if (problems.length) {
    return fail({
      requirement:
        'Under tool_choice "required" the message MUST carry tool_calls, each with a non-empty string id, type "function" and the name of an offered function.',
      expected: '[{"id": "call_…", "type": "function", "function": {"name": "get_weather", "arguments": "{…}"}}]',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(r.rec),
    });
  }
  return pass(`${r.calls.length} call(s) ${names(r.calls)}, ids ${JSON.stringify(r.calls.map((c) => c.id))}`);
}

/** tools.arguments-valid: each call's arguments a JSON string that validates against its parameters schema. */
export function judgeArgumentsValid(r: RequiredAnswer): Verdict {
  if (r.calls.length === 0) return inconclusive('no tool call to judge (tools.required-call reports it)');
  const problems = callProblems(r.calls, ['get_weather'], 'arguments');
  if (problems.length) {
    return fail({
      requirement:
        "function.arguments MUST be a string holding a JSON object that validates against the function's parameters schema.",
      expected: `JSON like {"city": "Paris", "unit": "celsius"} (schema ${JSON.stringify(WEATHER_PARAMS)})`,
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(r.rec),
    });
  }
  return pass(`arguments valid: ${r.calls.map((c) => escapeBytes(String(c.arguments), 80)).join(', ')}`);
}

/** tools.finish-reason: "tool_calls" after the calls. */
export function judgeFinishReason(r: RequiredAnswer): Verdict {
  if (r.calls.length === 0) return inconclusive('no tool call was made (tools.required-call reports it)');
  if (cut(r.finish))
    return inconclusive(
      `finish_reason "length": max_tokens ${TOOL_BUDGET} cut the answer (tools.truncation-length judges cuts)`,
    );
  if (r.finish !== 'tool_calls') {
    return fail({
      requirement: 'A message that calls tools (tool_choice "required") MUST end with finish_reason "tool_calls".',
      expected: '"tool_calls"',
      actual: `finish_reason ${JSON.stringify(r.finish)} with ${r.calls.length} call(s) ${names(r.calls)}`,
      bytes: excerpt(r.rec),
    });
  }
  return pass(`finish_reason "tool_calls" after ${r.calls.length} call(s)`);
}

// ---------------------------------------------------------------------------------------------------------------
// The other tool_choice values, not streamed

/** tools.named-choice: tool_choice naming get_time calls get_time and nothing else. */
export function judgeNamedChoice(a: ChatAnswer, rec: Recording): Verdict {
  if (a.calls.length === 0 && cut(a.finishReason))
    return inconclusive(`max_tokens ${TOOL_BUDGET} ran out before the call was complete`);
  const wrong = a.calls.filter((c) => c.name !== 'get_time');
  const problems = [
    ...(a.calls.length === 0 ? [`no tool_calls (content ${escapeBytes(String(a.content), 120)})`] : []),
    ...(wrong.length ? [`called ${names(wrong)} although tool_choice named "get_time" (the name was ignored)`] : []),
    ...(a.calls.length && !['tool_calls', 'stop'].includes(String(a.finishReason)) && !cut(a.finishReason)
      ? [`finish_reason ${JSON.stringify(a.finishReason)}`]
      : []),
  ];
  if (problems.length) {
    return fail({
      requirement:
        'tool_choice {"type": "function", "function": {"name": "get_time"}} MUST call get_time and no other function.',
      expected: 'tool_calls that all name get_time; finish_reason "tool_calls" or "stop"',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(rec),
    });
  }
  return pass(`named choice honoured: ${names(a.calls)}, finish_reason ${JSON.stringify(a.finishReason)}`);
}

/** tools.auto-choice: text, or tool_calls with finish_reason "tool_calls"; never a call written as text. */
export function judgeAutoChoice(a: ChatAnswer, rec: Recording): Verdict {
  // The calls' ids and arguments are judged under "required" (tools.required-call, tools.arguments-valid).
  const problems = a.calls.length
    ? a.finishReason !== 'tool_calls' && !cut(a.finishReason)
      ? [`finish_reason ${JSON.stringify(a.finishReason)} after tool calls (expected "tool_calls")`]
      : []
    : rawCallInText(a.content, ['get_weather']);
  if (cut(a.finishReason) && (a.calls.length === 0 || problems.length))
    return inconclusive(`max_tokens ${TOOL_BUDGET} cut the answer (content ${escapeBytes(String(a.content), 100)})`);
  if (problems.length) {
    return fail({
      requirement:
        'Under tool_choice "auto" a tool call MUST come as message.tool_calls with finish_reason "tool_calls", not as text in content.',
      expected: 'content text without a tool call in it, or tool_calls and finish_reason "tool_calls"',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(rec),
    });
  }
  return pass(
    a.calls.length
      ? `called ${names(a.calls)}, finish_reason "tool_calls"`
      : `answered in text (${escapeBytes(String(a.content), 60)})`,
  );
}

/** tools.none-choice: no call under tool_choice "none". */
export function judgeNoneChoice(a: ChatAnswer, rec: Recording): Verdict {
  if (a.calls.length || a.finishReason === 'tool_calls') {
    return fail({
      requirement: 'Under tool_choice "none" the model MUST NOT call a tool.',
      expected: 'a message with content, no tool_calls, finish_reason "stop" or "length"',
      actual: `${a.calls.length} tool call(s) ${names(a.calls)}, finish_reason ${JSON.stringify(a.finishReason)}`,
      bytes: excerpt(rec),
    });
  }
  return pass(`text answer (${escapeBytes(String(a.content), 60)}), finish_reason ${JSON.stringify(a.finishReason)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Streamed calls

/** tools.stream-deltas: each call's first delta carries index, id, type and an offered function.name. */
export function judgeStreamDeltas(s: StreamedCalls, rec: Recording): Verdict {
  if (s.calls.length === 0 && cut(s.finishReasons.at(-1)))
    return inconclusive(`max_tokens ${TOOL_BUDGET} ran out before a call began`);
  const problems = [
    ...(s.calls.length === 0 ? [`no tool-call deltas in the stream (content ${escapeBytes(s.content, 120)})`] : []),
    ...s.problems,
    // first-delta fields are in s.problems; here only whether the name is one we offered
    ...s.calls.flatMap((c, i) =>
      callShapeProblems(c, ['get_weather'], `streamed call ${i}`).filter((p) =>
        p.includes('is not one of the offered tools'),
      ),
    ),
  ];
  if (problems.length) {
    return fail({
      requirement:
        'Each streamed tool call MUST start with a delta carrying index, a non-empty id, type "function" and function.name; its argument fragments follow under the same index.',
      expected:
        '{"index": 0, "id": "call_…", "type": "function", "function": {"name": "get_weather", "arguments": ""}}, then {"index": 0, "function": {"arguments": "…"}} …',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(rec),
    });
  }
  return pass(`${s.calls.length} streamed call(s) ${names(s.calls)}, ids ${JSON.stringify(s.calls.map((c) => c.id))}`);
}

/** tools.stream-arguments: the fragments of each call concatenate to arguments that validate. */
export function judgeStreamArguments(s: StreamedCalls): Verdict {
  if (s.calls.length === 0) return inconclusive('no streamed call to judge (tools.stream-deltas reports it)');
  if (cut(s.finishReasons.at(-1)))
    return inconclusive(`max_tokens ${TOOL_BUDGET} cut the stream (tools.truncation-length judges cuts)`);
  const problems = callProblems(s.calls, ['get_weather'], 'arguments');
  if (problems.length) {
    return fail({
      requirement:
        'The argument fragments of each streamed call, concatenated, MUST be a JSON object that validates against the parameters schema.',
      expected: `e.g. {"city": "Paris", "unit": "celsius"} (schema ${JSON.stringify(WEATHER_PARAMS)})`,
      actual: problems[0]!,
      violations: problems.slice(1),
    });
  }
  return pass(
    `arguments valid after concatenating ${s.fragmentEvents.join('+')} fragment(s): ${s.calls.map((c) => escapeBytes(String(c.arguments), 80)).join(', ')}`,
  );
}

/** tools.stream-finish: exactly one finish_reason, "tool_calls". */
export function judgeStreamFinish(s: StreamedCalls): Verdict {
  if (s.calls.length === 0) return inconclusive('no streamed call to judge (tools.stream-deltas reports it)');
  if (s.finishReasons.length === 1 && cut(s.finishReasons[0]))
    return inconclusive(`max_tokens ${TOOL_BUDGET} cut the stream`);
  if (s.finishReasons.length !== 1 || s.finishReasons[0] !== 'tool_calls') {
    return fail({
      requirement: 'A streamed answer that calls tools MUST carry exactly one finish_reason, "tool_calls".',
      expected: 'one chunk with finish_reason "tool_calls"',
      actual: `finish_reason(s) ${JSON.stringify(s.finishReasons)} after ${s.calls.length} streamed call(s)`,
    });
  }
  return pass('one finish_reason, "tool_calls"');
}

/** tools.stream-incremental (INFO): how many deltas carried each call's arguments. */
export function judgeStreamIncremental(s: StreamedCalls): Verdict {
  if (s.calls.length === 0) return inconclusive('no streamed call to judge (tools.stream-deltas reports it)');
  const metrics = { fragmentEvents: s.fragmentEvents };
  if (s.fragmentEvents.every((n) => n <= 1))
    return pass(
      `arguments arrived whole, in one delta per call (${s.fragmentEvents.join(', ')}): allowed, but nothing of the call streams`,
      metrics,
    );
  return pass(`arguments spread over ${s.fragmentEvents.join(', ')} delta(s) per call`, metrics);
}

/** tools.parallel-indexes: several streamed calls in one turn keep distinct indexes and ids, none merged. */
export function judgeParallelIndexes(s: StreamedCalls, rec: Recording): Verdict {
  const metrics = { calls: s.calls.length };
  const mixed = s.calls.filter((c) => typeof c.name === 'string' && !(c.name in TOOL_PARAMS));
  const merged =
    s.calls.some((c) => typeof c.arguments === 'string' && jsonPrefix(c.arguments).state === 'invalid') ||
    mixed.length > 0 ||
    s.problems.some((p) => /changes (id|function\.name)/.test(p));
  const ids = s.calls.map((c) => c.id).filter((id) => typeof id === 'string' && id !== '');
  const indexes = s.calls.map((c) => c.index);
  const problems = [
    ...(merged
      ? [
          `calls streamed under one index were merged: ${s.calls.map((c) => `index ${JSON.stringify(c.index)} ${JSON.stringify(c.name)} arguments ${escapeBytes(String(c.arguments), 80)}`).join('; ')}`,
        ]
      : []),
    ...s.problems.filter((p) => /changes/.test(p)),
    ...(new Set(indexes).size < indexes.length ? [`indexes ${JSON.stringify(indexes)} repeat`] : []),
    ...(new Set(ids).size < ids.length ? [`ids ${JSON.stringify(ids)} repeat`] : []),
  ];
  if (problems.length) {
    return fail(
      {
        requirement: 'Each tool call in a turn MUST have its own index in the stream and its own id.',
        expected: "index 0, 1, … and distinct ids, each call's arguments a JSON object of its own",
        actual: problems[0]!,
        violations: problems.slice(1),
        bytes: excerpt(rec),
      },
      metrics,
    );
  }
  if (s.calls.length < 2)
    return inconclusive(
      `the model made ${s.calls.length} call(s) in the turn: nothing to tell apart (no model can be forced to call in parallel)`,
      metrics,
    );
  return pass(
    `${s.calls.length} calls ${names(s.calls)} under indexes ${JSON.stringify(indexes)} with distinct ids`,
    metrics,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Parallel calls off, the follow-up, a cut call, a bare tool

/**
 * tools.parallel-false: at most one call with parallel_tool_calls: false. `on` is how many calls the same request
 * made with parallel calls allowed (undefined when that answer could not be read).
 */
export function judgeParallelFalse(off: ChatAnswer, on: number | undefined, rec: Recording): Verdict {
  const metrics = { callsWithParallel: on, callsWithoutParallel: off.calls.length };
  if (off.calls.length > 1) {
    return fail(
      {
        requirement: 'With parallel_tool_calls: false the model MUST make at most one tool call per turn.',
        expected: 'one call (or none)',
        actual: `${off.calls.length} calls ${names(off.calls)}`,
        bytes: excerpt(rec),
      },
      metrics,
    );
  }
  if (on === undefined || on < 2)
    return inconclusive(
      `the model made ${on ?? 'no readable'} call(s) with parallel calls allowed, so one call with them off shows nothing`,
      metrics,
    );
  return pass(`${on} calls with parallel calls allowed, ${off.calls.length} with parallel_tool_calls: false`, metrics);
}

/** tools.follow-up: the conversation with the assistant's call and the role "tool" result is answered. */
export function judgeFollowUp(a: Answered, answer: ChatAnswer, rec: Recording): Verdict {
  if (a.kind === 'budget') return inconclusive(a.detail);
  if (a.kind !== 'ok' || answer.problem) {
    return fail({
      requirement:
        'A conversation with an assistant tool_calls message and the matching role "tool" message MUST be accepted and answered.',
      expected: 'HTTP 200 with choices[0].message (text, or another call)',
      actual: a.kind === 'ok' ? answer.problem! : a.detail,
      bytes: excerpt(rec),
    });
  }
  return pass(
    `answered: ${answer.calls.length ? `another call ${names(answer.calls)}` : `text ${escapeBytes(String(answer.content), 60)}`}, finish_reason ${JSON.stringify(answer.finishReason)}`,
  );
}

/**
 * tools.truncation-length: a call cut by max_tokens (`limit`, below the `fullCallTokens` the whole call took) ends
 * with finish_reason "length". `completionTokens` is the cut answer's usage.completion_tokens.
 */
export function judgeTruncation(
  a: ChatAnswer,
  o: { limit: number; fullCallTokens: unknown; completionTokens: unknown },
  rec: Recording,
): Verdict {
  const { limit, fullCallTokens: n, completionTokens: used } = o;
  const broken = a.calls.filter(
    (c) => judgeArguments(c.arguments, TOOL_PARAMS[String(c.name)] ?? {}).state === 'invalid-json',
  );
  const metrics = { maxTokens: limit, fullCallTokens: n, completionTokens: used, finishReason: a.finishReason };
  if (a.finishReason === 'length')
    return pass(
      `finish_reason "length" at max_tokens ${limit}${a.calls.length ? ` (arguments as cut: ${a.calls.map((c) => escapeBytes(String(c.arguments), 60)).join(', ')})` : ''}`,
      metrics,
    );
  const reachedLimit = typeof used === 'number' && used >= limit;
  if (broken.length || reachedLimit) {
    return fail(
      {
        requirement:
          'A tool call cut by max_tokens MUST end with finish_reason "length" (its arguments are incomplete), never "tool_calls".',
        expected: `finish_reason "length" at max_tokens ${limit}`,
        actual: `finish_reason ${JSON.stringify(a.finishReason)} with ${used ?? 'unknown'} completion tokens${broken.length ? `, arguments not JSON: ${broken.map((c) => escapeBytes(String(c.arguments), 80)).join(', ')}` : ''}`,
        bytes: excerpt(rec),
      },
      metrics,
    );
  }
  return inconclusive(
    `max_tokens ${limit} did not cut the answer (${used ?? 'unknown'} tokens, finish_reason ${JSON.stringify(a.finishReason)}): the full call took ${n ?? 'an unknown number of'} tokens`,
    metrics,
  );
}

/** tools.description-optional: a tool without a description is accepted. */
export function judgeDescriptionOptional(a: Answered, rec: Recording): Verdict {
  if (a.kind === 'ok') return pass('accepted (HTTP 200)');
  if (a.kind === 'budget') return inconclusive(a.detail);
  return fail({
    requirement: 'A tool whose function has no description (an optional field) MUST be accepted like any other.',
    expected: 'HTTP 200',
    actual: a.detail,
    bytes: excerpt(rec),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages

/** tools.anthropic-tool-use: tool_use blocks with an id, an offered name and a valid input; stop_reason "tool_use". */
export function judgeAnthropicToolUse(a: AnthropicAnswer, rec: Recording): Verdict {
  if (a.toolUses.length === 0 && a.stopReason === 'max_tokens')
    return inconclusive(`max_tokens ${TOOL_BUDGET} ran out before the tool_use block was complete`);
  const problems = [
    ...(a.problem ? [a.problem] : []),
    ...(a.toolUses.length === 0 ? [`no tool_use block (text ${escapeBytes(a.text, 100)})`] : []),
    ...a.toolUses.flatMap((u, i) => [
      ...toolUseShapeProblems(u, ['get_weather'], `tool_use ${i}`),
      ...judgeValue(u.input, WEATHER_PARAMS).problems.map((p) => `tool_use ${i} input: ${p}`),
    ]),
    ...(a.toolUses.length && a.stopReason !== 'tool_use'
      ? [`stop_reason ${JSON.stringify(a.stopReason)} (expected "tool_use")`]
      : []),
  ];
  if (problems.length) {
    return fail({
      requirement:
        'Under tool_choice {"type": "any"} the content MUST hold tool_use blocks with an id, an offered name and an input object that validates, and stop_reason MUST be "tool_use".',
      expected:
        '[{"type": "tool_use", "id": "toolu_…", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}}], stop_reason "tool_use"',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(rec),
    });
  }
  return pass(`${a.toolUses.length} tool_use block(s), stop_reason "tool_use"`);
}

/** tools.anthropic-stream: content_block_start (id, name), input_json_delta fragments that validate, "tool_use". */
export function judgeAnthropicStream(s: AnthropicStreamed, rec: Recording): Verdict {
  if (s.toolUses.length === 0 && s.stopReason === 'max_tokens')
    return inconclusive(`max_tokens ${TOOL_BUDGET} ran out before a tool_use block began`);
  const problems = [
    ...(s.toolUses.length === 0 ? [`no tool_use content block in the stream (text ${escapeBytes(s.text, 100)})`] : []),
    ...s.problems,
    ...s.toolUses.flatMap((u, i) => {
      const args = judgeArguments(u.json, WEATHER_PARAMS);
      return [
        ...toolUseShapeProblems(u, ['get_weather'], `tool_use ${i}`),
        ...(args.state === 'valid'
          ? []
          : args.problems.map((p) => `tool_use ${i} partial_json: ${p} — ${escapeBytes(String(u.json), 100)}`)),
      ];
    }),
    ...(s.toolUses.length && s.stopReason !== 'tool_use' && s.stopReason !== 'max_tokens'
      ? [`stop_reason ${JSON.stringify(s.stopReason)} (expected "tool_use")`]
      : []),
  ];
  if (s.stopReason === 'max_tokens' && problems.length)
    return inconclusive(`max_tokens ${TOOL_BUDGET} cut the stream: ${problems[0]}`);
  if (problems.length) {
    return fail({
      requirement:
        'A streamed tool_use block MUST start with content_block_start carrying its id and name; its input_json_delta fragments MUST concatenate to a JSON object that validates; stop_reason MUST be "tool_use".',
      expected:
        'content_block_start {type "tool_use", id, name}, input_json_delta fragments, message_delta stop_reason "tool_use"',
      actual: problems[0]!,
      violations: problems.slice(1),
      bytes: excerpt(rec),
    });
  }
  return pass(
    `${s.toolUses.length} streamed tool_use block(s) in ${s.fragmentEvents.join('+')} fragment(s), stop_reason "tool_use"`,
  );
}
