// lib/tool-calls: reading tool calls the ways servers send them (whole, streamed by index, Anthropic blocks).
import { expect, test } from 'vitest';
import {
  anthropicAnswer,
  anthropicStreamedToolUses,
  callShapeProblems,
  chatAnswer,
  judgeArguments,
  streamedToolCalls,
} from '../lib/decode/tool-calls.ts';

const SCHEMA = {
  type: 'object',
  properties: { city: { enum: ['Paris', 'Tokyo'] } },
  required: ['city'],
  additionalProperties: false,
};
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  json: { choices: [{ index: 0, delta, finish_reason: finish }] },
});
const call = (d: Record<string, unknown>) => chunk({ tool_calls: [d] });

test('arguments: valid, not JSON, incomplete, not an object, breaking the schema', () => {
  expect(judgeArguments('{"city": "Paris"}', SCHEMA).state).toBe('valid');
  expect(judgeArguments("{'city': 'Paris'}", SCHEMA)).toMatchObject({
    state: 'invalid-json',
    problems: [expect.stringMatching(/not JSON/)],
  });
  expect(judgeArguments('{"city": "Par', SCHEMA)).toMatchObject({
    state: 'invalid-json',
    problems: [expect.stringMatching(/incomplete/)],
  });
  expect(judgeArguments('["Paris"]', SCHEMA).state).toBe('not-object');
  expect(judgeArguments({ city: 'Paris' }, SCHEMA).state).toBe('not-string');
  const bad = judgeArguments('{"city": "Lima", "x": 1}', SCHEMA);
  expect(bad.state).toBe('schema');
  expect(bad.problems.join('\n')).toMatch(/\/city must be equal to one of the allowed values \["Paris","Tokyo"\]/);
  expect(bad.problems.join('\n')).toMatch(/must NOT have additional properties \("x"\)/);
});

test('non-streamed: calls and their envelope problems (id "", wrong type, unknown name)', () => {
  const a = chatAnswer({
    choices: [
      {
        finish_reason: 'tool_calls',
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: '', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
            { id: 'call_1', type: 'tool', function: { name: 'nope', arguments: '{}' } },
          ],
        },
      },
    ],
  });
  expect(a.calls).toHaveLength(2);
  expect(a.finishReason).toBe('tool_calls');
  expect(callShapeProblems(a.calls[0]!, ['get_weather'], 'c0')).toEqual([
    expect.stringMatching(/id is "" \(an empty string\)/),
  ]);
  expect(callShapeProblems(a.calls[1]!, ['get_weather'], 'c1')).toEqual([
    expect.stringMatching(/type is "tool"/),
    expect.stringMatching(/"nope" is not one of the offered tools/),
  ]);
  expect(chatAnswer({ object: 'text_completion' }).problem).toMatch(/no choices\[0\]\.message/);
});

test('streamed: the OpenAI shape assembles with no problems; fragments counted', () => {
  const s = streamedToolCalls([
    chunk({ role: 'assistant', content: null }),
    call({ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }),
    call({ index: 0, function: { arguments: '{"city"' } }),
    call({ index: 0, function: { arguments: ': "Paris"}' } }),
    chunk({}, 'tool_calls'),
  ]);
  expect(s.problems).toEqual([]);
  expect(s.calls).toEqual([
    { id: 'call_a', type: 'function', name: 'get_weather', arguments: '{"city": "Paris"}', index: 0 },
  ]);
  expect(s.fragmentEvents).toEqual([2]);
  expect(s.finishReasons).toEqual(['tool_calls']);
});

test('streamed: a first delta without id, without index, or with id "" is reported', () => {
  expect(
    streamedToolCalls([call({ index: 0, type: 'function', function: { name: 'f', arguments: '{}' } })]).problems,
  ).toEqual([expect.stringMatching(/first delta lacks id/)]);
  expect(
    streamedToolCalls([call({ index: 0, id: '', type: 'function', function: { name: 'f', arguments: '{}' } })])
      .problems,
  ).toEqual([expect.stringMatching(/lacks id \(empty string\)/)]);
  const noIndex = streamedToolCalls([
    call({ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a"' } }),
    call({ function: { arguments: ':1}' } }),
  ]);
  expect(noIndex.problems[0]).toMatch(/2 tool-call delta\(s\) without an integer index/);
  expect(noIndex.calls.map((c) => c.arguments)).toEqual(['{"a":1}']);
});

test('streamed: two calls under one index are merged and the changes are reported', () => {
  const s = streamedToolCalls([
    call({
      index: 0,
      id: 'call_a',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    }),
    call({ index: 0, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"city":"Tokyo"}' } }),
  ]);
  expect(s.calls).toHaveLength(1);
  expect(s.calls[0]!.arguments).toBe('{"city":"Paris"}{"city":"Tokyo"}');
  expect(s.problems.join('\n')).toMatch(/changes id from "call_a" to "call_b"/);
  expect(s.problems.join('\n')).toMatch(/changes function.name from "get_weather" to "get_time"/);
});

test('Anthropic: tool_use blocks, whole and streamed', () => {
  const a = anthropicAnswer({
    content: [
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
  });
  expect(a).toMatchObject({
    stopReason: 'tool_use',
    text: 'Checking.',
    toolUses: [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
  });
  const s = anthropicStreamedToolUses([
    {
      json: {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
      },
    },
    { json: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } } },
    { json: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } } },
    { json: { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: 'x' } } },
    { json: { type: 'message_delta', delta: { stop_reason: 'tool_use' } } },
  ]);
  expect(s.toolUses[0]).toMatchObject({ id: 'toolu_1', name: 'get_weather', json: '{"city":"Paris"}' });
  expect(s.fragmentEvents).toEqual([2]);
  expect(s.stopReason).toBe('tool_use');
  expect(s.problems).toEqual([expect.stringMatching(/index 3, which no tool_use content_block_start opened/)]);
});
