// lib/grading/tools.ts: each rule of the tools family both ways, on hand-written answers (no server, no HTTP).
import { describe, expect, test } from 'vitest';
import { anthropicAnswer, anthropicStreamedToolUses, chatAnswer, streamedToolCalls } from '../lib/decode/tool-calls.ts';
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
} from '../lib/grading/tools.ts';
import type { Recording, Verdict } from '../lib/model/types.ts';

const rec = (body = '{}'): Recording => ({
  method: 'POST',
  url: 'http://127.0.0.1:1/v1/chat/completions',
  t0Abs: 0,
  status: 200,
  headers: {},
  reads: [],
  tEnd: 1,
  body: new TextEncoder().encode(body),
  truncated: false,
});

const WEATHER_ARGS = '{"city": "Paris", "unit": "celsius"}';
const TIME_ARGS = '{"city": "Tokyo", "format": "24h"}';
const toolCall = (name: string, args: string, id = 'call_1') => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
/** A chat.completion with these calls (or text), as the OpenAI API sends it. */
const completion = (o: { calls?: unknown[]; content?: string | null; finish?: string }) =>
  chatAnswer({
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: o.content ?? null, ...(o.calls ? { tool_calls: o.calls } : {}) },
        finish_reason: o.finish ?? (o.calls ? 'tool_calls' : 'stop'),
      },
    ],
  });

function required(o: Parameters<typeof completion>[0]): RequiredAnswer {
  const r = requiredAnswer(completion(o), rec());
  if (isVerdict(r)) throw new Error(`not an answer: ${r.message}`);
  return r;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  json: { choices: [{ index: 0, delta, finish_reason: finish }] },
});
const delta = (d: Record<string, unknown>) => chunk({ tool_calls: [d] });
/** A streamed call: the first delta names it, the arguments follow in `fragments`. */
const streamedCall = (index: number, id: string, name: string, fragments: string[]) => [
  delta({ index, id, type: 'function', function: { name, arguments: '' } }),
  ...fragments.map((a) => delta({ index, function: { arguments: a } })),
];
const stream = (chunks: Array<{ json: unknown }>, finish: string[] = ['tool_calls']) =>
  streamedToolCalls([...chunks, ...finish.map((f) => chunk({}, f))]);
const weatherStream = (finish?: string[]) =>
  stream(streamedCall(0, 'call_a', 'get_weather', ['{"city": "Paris", ', '"unit": "celsius"}']), finish);

const expectVerdict = (v: Verdict, outcome: Verdict['outcome'], ...parts: string[]) => {
  expect(v.outcome, v.message).toBe(outcome);
  for (const p of parts) expect(v.message).toContain(p);
};

describe('tool_choice "required", not streamed', () => {
  test('an answer that is no chat.completion fails; one cut before its call is inconclusive', () => {
    expectVerdict(
      requiredAnswer(chatAnswer({ object: 'text_completion' }), rec('{"object":"text_completion"}')) as Verdict,
      'fail',
      'MUST be a chat.completion',
      'no choices[0].message in the response',
      'Bytes:    {"object":"text_completion"}',
    );
    expectVerdict(
      requiredAnswer(completion({ content: 'I will call', finish: 'length' }), rec()) as Verdict,
      'inconclusive',
      'max_tokens 256 ran out before the call was complete (finish_reason "length", content I will call)',
    );
    expect(isVerdict(requiredAnswer(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }), rec()))).toBe(
      false,
    );
  });

  test('tools.required-call: a call with id, type and an offered name passes; an empty id, no call, a foreign name fail', () => {
    expectVerdict(
      judgeRequiredCall(required({ calls: [toolCall('get_weather', WEATHER_ARGS)] })),
      'pass',
      '1 call(s) ["get_weather"], ids ["call_1"]',
    );
    expectVerdict(
      judgeRequiredCall(required({ calls: [toolCall('get_weather', WEATHER_ARGS, '')] })),
      'fail',
      'MUST carry tool_calls',
      'tool_calls[0] ("get_weather"): id is "" (an empty string)',
    );
    expectVerdict(
      judgeRequiredCall(required({ content: 'It is sunny.' })),
      'fail',
      'no tool_calls at all (content It is sunny., finish_reason "stop")',
    );
    expectVerdict(
      judgeRequiredCall(required({ calls: [toolCall('get_time', TIME_ARGS)] })),
      'fail',
      'function.name "get_time" is not one of the offered tools ["get_weather"]',
    );
  });

  test('tools.arguments-valid: arguments that validate pass; not JSON or breaking the schema fail; no call is inconclusive', () => {
    expectVerdict(
      judgeArgumentsValid(required({ calls: [toolCall('get_weather', WEATHER_ARGS)] })),
      'pass',
      `arguments valid: ${WEATHER_ARGS}`,
    );
    expectVerdict(
      judgeArgumentsValid(required({ calls: [toolCall('get_weather', "{'city': 'Paris'}")] })),
      'fail',
      'MUST be a string holding a JSON object',
      'arguments are not JSON',
      "— arguments {'city': 'Paris'}",
    );
    expectVerdict(
      judgeArgumentsValid(required({ calls: [toolCall('get_weather', '{"unit": "celsius", "x": 1}')] })),
      'fail',
      "must have required property 'city'",
      'must NOT have additional properties ("x")',
    );
    expectVerdict(
      judgeArgumentsValid(required({ content: 'no call' })),
      'inconclusive',
      'no tool call to judge (tools.required-call reports it)',
    );
  });

  test('tools.finish-reason: "tool_calls" passes; "stop" fails; "length" and no call are inconclusive', () => {
    const calls = [toolCall('get_weather', WEATHER_ARGS)];
    expectVerdict(judgeFinishReason(required({ calls })), 'pass', 'finish_reason "tool_calls" after 1 call(s)');
    expectVerdict(
      judgeFinishReason(required({ calls, finish: 'stop' })),
      'fail',
      'MUST end with finish_reason "tool_calls"',
      'finish_reason "stop" with 1 call(s) ["get_weather"]',
    );
    expectVerdict(
      judgeFinishReason(required({ calls, finish: 'length' })),
      'inconclusive',
      'max_tokens 256 cut the answer',
    );
    expectVerdict(judgeFinishReason(required({ content: 'x' })), 'inconclusive', 'no tool call was made');
  });
});

describe('the other tool_choice values', () => {
  test('tools.named-choice: get_time called passes (with "stop" too); another name fails; a cut with no call is inconclusive', () => {
    expectVerdict(
      judgeNamedChoice(completion({ calls: [toolCall('get_time', TIME_ARGS)] }), rec()),
      'pass',
      'named choice honoured: ["get_time"], finish_reason "tool_calls"',
    );
    expectVerdict(
      judgeNamedChoice(completion({ calls: [toolCall('get_time', TIME_ARGS)], finish: 'stop' }), rec()),
      'pass',
    );
    expectVerdict(
      judgeNamedChoice(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }), rec()),
      'fail',
      'called ["get_weather"] although tool_choice named "get_time" (the name was ignored)',
    );
    expectVerdict(
      judgeNamedChoice(completion({ calls: [toolCall('get_time', TIME_ARGS)], finish: 'content_filter' }), rec()),
      'fail',
      'finish_reason "content_filter"',
    );
    expectVerdict(
      judgeNamedChoice(completion({ content: '', finish: 'length' }), rec()),
      'inconclusive',
      'ran out before the call was complete',
    );
  });

  test('tools.auto-choice: text or a proper call passes; a call written as text or a "stop" after calls fails', () => {
    expectVerdict(
      judgeAutoChoice(completion({ content: 'It is sunny in Paris.' }), rec()),
      'pass',
      'answered in text (It is sunny in Paris.)',
    );
    expectVerdict(
      judgeAutoChoice(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }), rec()),
      'pass',
      'called ["get_weather"], finish_reason "tool_calls"',
    );
    expectVerdict(
      judgeAutoChoice(
        completion({ content: `<tool_call>{"name": "get_weather", "arguments": ${WEATHER_ARGS}}</tool_call>` }),
        rec(),
      ),
      'fail',
      'the call to get_weather came as text in content, not as message.tool_calls',
    );
    expectVerdict(
      judgeAutoChoice(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)], finish: 'stop' }), rec()),
      'fail',
      'finish_reason "stop" after tool calls (expected "tool_calls")',
    );
    expectVerdict(
      judgeAutoChoice(completion({ content: '{"name": "get_weather"', finish: 'length' }), rec()),
      'inconclusive',
      'max_tokens 256 cut the answer',
    );
  });

  test('tools.none-choice: text passes; a call fails', () => {
    expectVerdict(
      judgeNoneChoice(completion({ content: 'Sunny.' }), rec()),
      'pass',
      'text answer (Sunny.), finish_reason "stop"',
    );
    expectVerdict(
      judgeNoneChoice(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }), rec()),
      'fail',
      'MUST NOT call a tool',
      '1 tool call(s) ["get_weather"], finish_reason "tool_calls"',
    );
  });
});

describe('streamed calls', () => {
  test('tools.stream-deltas: a complete first delta passes; a missing id or a foreign name fails; a cut before any call is inconclusive', () => {
    expectVerdict(
      judgeStreamDeltas(weatherStream(), rec()),
      'pass',
      '1 streamed call(s) ["get_weather"], ids ["call_a"]',
    );
    expectVerdict(
      judgeStreamDeltas(
        stream([delta({ index: 0, type: 'function', function: { name: 'get_weather', arguments: WEATHER_ARGS } })]),
        rec(),
      ),
      'fail',
      'MUST start with a delta carrying index',
      'its first delta lacks id',
    );
    expectVerdict(
      judgeStreamDeltas(stream(streamedCall(0, 'call_a', 'get_time', [TIME_ARGS])), rec()),
      'fail',
      'streamed call 0: function.name "get_time" is not one of the offered tools',
    );
    expectVerdict(
      judgeStreamDeltas(stream([chunk({ content: 'I will' })], ['length']), rec()),
      'inconclusive',
      'max_tokens 256 ran out before a call began',
    );
    expectVerdict(
      judgeStreamDeltas(stream([chunk({ content: 'Sunny.' })], ['stop']), rec()),
      'fail',
      'no tool-call deltas in the stream (content Sunny.)',
    );
  });

  test('tools.stream-arguments: fragments that validate pass; fragments that are not JSON fail; a cut is inconclusive', () => {
    expectVerdict(
      judgeStreamArguments(weatherStream()),
      'pass',
      `arguments valid after concatenating 2 fragment(s): ${WEATHER_ARGS}`,
    );
    expectVerdict(
      judgeStreamArguments(stream(streamedCall(0, 'call_a', 'get_weather', ["{'city': ", "'Paris'}"]))),
      'fail',
      'concatenated, MUST be a JSON object that validates',
      'arguments are not JSON',
    );
    expectVerdict(judgeStreamArguments(weatherStream(['length'])), 'inconclusive', 'max_tokens 256 cut the stream');
    expectVerdict(judgeStreamArguments(stream([], ['stop'])), 'inconclusive', 'no streamed call to judge');
  });

  test('tools.stream-finish: one "tool_calls" passes; "stop" or two finish reasons fail; one "length" is inconclusive', () => {
    expectVerdict(judgeStreamFinish(weatherStream()), 'pass', 'one finish_reason, "tool_calls"');
    expectVerdict(
      judgeStreamFinish(weatherStream(['stop'])),
      'fail',
      'MUST carry exactly one finish_reason',
      'finish_reason(s) ["stop"] after 1 streamed call(s)',
    );
    expectVerdict(
      judgeStreamFinish(weatherStream(['tool_calls', 'tool_calls'])),
      'fail',
      'finish_reason(s) ["tool_calls","tool_calls"]',
    );
    expectVerdict(judgeStreamFinish(weatherStream(['length'])), 'inconclusive', 'max_tokens 256 cut the stream');
  });

  test('tools.stream-incremental (INFO): spread over deltas or whole, both pass and say which', () => {
    const spread = judgeStreamIncremental(weatherStream());
    expectVerdict(spread, 'pass', 'arguments spread over 2 delta(s) per call');
    expect(spread.metrics).toEqual({ fragmentEvents: [2] });
    expectVerdict(
      judgeStreamIncremental(stream(streamedCall(0, 'call_a', 'get_weather', [WEATHER_ARGS]))),
      'pass',
      'arguments arrived whole, in one delta per call (1)',
    );
  });

  test('tools.parallel-indexes: two calls under two indexes pass; merged under one index fail; one call is inconclusive', () => {
    const two = stream([
      ...streamedCall(0, 'call_a', 'get_weather', [WEATHER_ARGS]),
      ...streamedCall(1, 'call_b', 'get_time', [TIME_ARGS]),
    ]);
    expectVerdict(
      judgeParallelIndexes(two, rec()),
      'pass',
      '2 calls ["get_weather","get_time"] under indexes [0,1] with distinct ids',
    );
    const merged = stream([
      ...streamedCall(0, 'call_a', 'get_weather', [WEATHER_ARGS]),
      ...streamedCall(0, 'call_b', 'get_time', [TIME_ARGS]),
    ]);
    expectVerdict(
      judgeParallelIndexes(merged, rec()),
      'fail',
      'MUST have its own index in the stream and its own id',
      'calls streamed under one index were merged',
      'changes id from "call_a" to "call_b"',
    );
    const sameId = stream([
      ...streamedCall(0, 'call_a', 'get_weather', [WEATHER_ARGS]),
      ...streamedCall(1, 'call_a', 'get_time', [TIME_ARGS]),
    ]);
    expectVerdict(judgeParallelIndexes(sameId, rec()), 'fail', 'ids ["call_a","call_a"] repeat');
    expectVerdict(judgeParallelIndexes(weatherStream(), rec()), 'inconclusive', 'the model made 1 call(s) in the turn');
  });
});

describe('parallel calls off, the follow-up, a cut call, a bare tool', () => {
  const one = completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] });
  const two = completion({ calls: [toolCall('get_weather', WEATHER_ARGS), toolCall('get_time', TIME_ARGS, 'call_2')] });

  test('tools.parallel-false: one call where two were made with parallel calls on passes; two fail; no contrast is inconclusive', () => {
    expectVerdict(
      judgeParallelFalse(one, 2, rec()),
      'pass',
      '2 calls with parallel calls allowed, 1 with parallel_tool_calls: false',
    );
    expectVerdict(
      judgeParallelFalse(two, 2, rec()),
      'fail',
      'at most one tool call per turn',
      '2 calls ["get_weather","get_time"]',
    );
    expectVerdict(
      judgeParallelFalse(one, 1, rec()),
      'inconclusive',
      'the model made 1 call(s) with parallel calls allowed',
    );
    expectVerdict(judgeParallelFalse(one, undefined, rec()), 'inconclusive', 'the model made no readable call(s)');
  });

  test('tools.follow-up: an answer passes; an HTTP 500 or no message fails; our budget running out is inconclusive', () => {
    expectVerdict(
      judgeFollowUp({ kind: 'ok' }, completion({ content: 'It is 21 degrees.' }), rec()),
      'pass',
      'answered: text It is 21 degrees., finish_reason "stop"',
    );
    expectVerdict(
      judgeFollowUp({ kind: 'broken', detail: 'HTTP 500: Unsupported message role: tool' }, chatAnswer({}), rec()),
      'fail',
      'MUST be accepted and answered',
      'Actual:   HTTP 500: Unsupported message role: tool',
    );
    expectVerdict(
      judgeFollowUp({ kind: 'ok' }, chatAnswer({}), rec()),
      'fail',
      'no choices[0].message in the response',
    );
    expectVerdict(
      judgeFollowUp({ kind: 'budget', detail: 'our total deadline' }, chatAnswer({}), rec()),
      'inconclusive',
    );
  });

  test('tools.truncation-length: "length" passes; "tool_calls" on cut arguments or at the limit fails; no cut is inconclusive', () => {
    const o = { limit: 20, fullCallTokens: 23, completionTokens: 20 };
    expectVerdict(
      judgeTruncation(completion({ calls: [toolCall('get_weather', '{"city": "Par')], finish: 'length' }), o, rec()),
      'pass',
      'finish_reason "length" at max_tokens 20 (arguments as cut: {"city": "Par)',
    );
    expectVerdict(
      judgeTruncation(completion({ calls: [toolCall('get_weather', '{"city": "Par')] }), o, rec()),
      'fail',
      'never "tool_calls"',
      'finish_reason "tool_calls" with 20 completion tokens, arguments not JSON: {"city": "Par',
    );
    expectVerdict(
      judgeTruncation(completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }), o, rec()),
      'fail',
      'finish_reason "tool_calls" with 20 completion tokens',
    );
    const notCut = judgeTruncation(
      completion({ calls: [toolCall('get_weather', WEATHER_ARGS)] }),
      { limit: 20, fullCallTokens: undefined, completionTokens: 12 },
      rec(),
    );
    expectVerdict(notCut, 'inconclusive', 'max_tokens 20 did not cut the answer (12 tokens', 'an unknown number of');
    expect(notCut.metrics).toEqual({
      maxTokens: 20,
      fullCallTokens: undefined,
      completionTokens: 12,
      finishReason: 'tool_calls',
    });
  });

  test('tools.description-optional: a 200 passes; a 500 fails; our budget running out is inconclusive', () => {
    expectVerdict(judgeDescriptionOptional({ kind: 'ok' }, rec()), 'pass', 'accepted (HTTP 200)');
    expectVerdict(
      judgeDescriptionOptional(
        { kind: 'broken', detail: "HTTP 500: Failed to parse tools: key 'description' not found" },
        rec(),
      ),
      'fail',
      'no description (an optional field) MUST be accepted',
      "HTTP 500: Failed to parse tools: key 'description' not found",
    );
    expectVerdict(
      judgeDescriptionOptional({ kind: 'budget', detail: 'our deadline' }, rec()),
      'inconclusive',
      'our deadline',
    );
  });
});

describe('Anthropic Messages', () => {
  const toolUse = (input: unknown, stop = 'tool_use') =>
    anthropicAnswer({ content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input }], stop_reason: stop });
  const events = (partial: string[], stop: string, name = 'get_weather') =>
    anthropicStreamedToolUses(
      [
        { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name, input: {} } },
        ...partial.map((p) => ({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'input_json_delta', partial_json: p },
        })),
        { type: 'message_delta', delta: { stop_reason: stop } },
      ].map((json) => ({ json })),
    );

  test('tools.anthropic-tool-use: a valid block with "tool_use" passes; "end_turn" or a bad input fails; a cut is inconclusive', () => {
    expectVerdict(
      judgeAnthropicToolUse(toolUse({ city: 'Paris', unit: 'celsius' }), rec()),
      'pass',
      '1 tool_use block(s), stop_reason "tool_use"',
    );
    expectVerdict(
      judgeAnthropicToolUse(toolUse({ city: 'Paris', unit: 'celsius' }, 'end_turn'), rec()),
      'fail',
      'stop_reason MUST be "tool_use"',
      'stop_reason "end_turn" (expected "tool_use")',
    );
    expectVerdict(
      judgeAnthropicToolUse(toolUse({ unit: 'celsius' }), rec()),
      'fail',
      "tool_use 0 input: (root) must have required property 'city'",
    );
    expectVerdict(
      judgeAnthropicToolUse(anthropicAnswer({ content: [], stop_reason: 'max_tokens' }), rec()),
      'inconclusive',
      'max_tokens 256 ran out before the tool_use block was complete',
    );
  });

  test('tools.anthropic-stream: fragments that validate with "tool_use" pass; "end_turn" or broken fragments fail; a cut is inconclusive', () => {
    expectVerdict(
      judgeAnthropicStream(events(['{"city": "Paris", ', '"unit": "celsius"}'], 'tool_use'), rec()),
      'pass',
      '1 streamed tool_use block(s) in 2 fragment(s), stop_reason "tool_use"',
    );
    // A block complete before max_tokens struck is judged on what it holds.
    expect(judgeAnthropicStream(events([WEATHER_ARGS], 'max_tokens'), rec()).outcome).toBe('pass');
    expectVerdict(
      judgeAnthropicStream(events([WEATHER_ARGS], 'end_turn'), rec()),
      'fail',
      'stop_reason "end_turn" (expected "tool_use")',
    );
    expectVerdict(
      judgeAnthropicStream(events(["{'city': 'Paris'}"], 'tool_use'), rec()),
      'fail',
      'tool_use 0 partial_json: arguments are not JSON',
    );
    expectVerdict(
      judgeAnthropicStream(events(['{"city": "Par'], 'max_tokens'), rec()),
      'inconclusive',
      'max_tokens 256 cut the stream: tool_use 0 partial_json: arguments end before the JSON does',
    );
  });
});
