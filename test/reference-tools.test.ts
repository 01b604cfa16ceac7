// The reference server's tool calls and response_format (fixtures/reference-server/tools.ts): what it writes validates,
// is deterministic at temperature 0, and invalid tool fields get a 400 naming the parameter, like the real APIs.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { jsonInstance } from '../fixtures/reference-server/json-instance.ts';
import { type RunningServer, startReferenceServer } from '../fixtures/reference-server/main.ts';
import { mulberry32 } from '../fixtures/reference-server/model.ts';
import { schemaProblems } from '../lib/decode/tool-calls.ts';

const SCHEMAS: unknown[] = [
  {
    type: 'object',
    properties: { city: { type: 'string', enum: ['Paris', 'Tokyo'] }, unit: { enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: {
      n: { type: 'integer', minimum: 3, maximum: 7 },
      x: { type: 'number', minimum: -1, maximum: 1 },
      ok: { type: 'boolean' },
    },
    required: ['n', 'x', 'ok'],
  },
  {
    type: 'object',
    properties: {
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1, maxItems: 2 },
      name: { type: 'string', maxLength: 12 },
    },
    required: ['tags', 'name'],
  },
  {
    type: 'object',
    properties: {
      v: { anyOf: [{ type: 'integer', minimum: 0, maximum: 2 }, { type: 'null' }] },
      c: { const: 'k' },
      t: { type: ['string', 'null'], maxLength: 20 },
    },
    required: ['v', 'c', 't'],
  },
  {
    type: 'object',
    properties: {
      nested: {
        type: 'object',
        properties: { deep: { type: 'array', items: { type: 'boolean' }, maxItems: 3 } },
        required: ['deep'],
      },
    },
    required: ['nested'],
  },
];

test('jsonInstance: every value validates against its bounded schema (200 seeds each)', () => {
  for (const schema of SCHEMAS) {
    for (let seed = 0; seed < 200; seed++) {
      const v = jsonInstance(schema, mulberry32(seed));
      expect(schemaProblems(v, schema), `${JSON.stringify(schema)} seed ${seed}: ${JSON.stringify(v)}`).toEqual([]);
    }
  }
});

describe('over HTTP', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startReferenceServer({ port: 0, decodeStepMs: 1, log: () => undefined });
  });
  afterAll(async () => {
    await server?.close();
  });
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, json: (await r.json()) as any };
  };
  const chat = (extra: Record<string, unknown>, messages: unknown[] = [{ role: 'user', content: 'hi JSON' }]) =>
    post('/v1/chat/completions', { model: 'reference-model', messages, temperature: 0, max_tokens: 200, ...extra });
  const TOOL = { type: 'function', function: { name: 'f', parameters: SCHEMAS[0] } };

  test('json_schema output is deterministic at temperature 0 and validates', async () => {
    const rf = { type: 'json_schema', json_schema: { name: 's', strict: true, schema: SCHEMAS[1] } };
    const [a, b] = await Promise.all([chat({ response_format: rf }), chat({ response_format: rf })]);
    expect(a.json.choices[0].message.content).toBe(b.json.choices[0].message.content);
    expect(schemaProblems(JSON.parse(a.json.choices[0].message.content), SCHEMAS[1])).toEqual([]);
    expect(a.json.choices[0].finish_reason).toBe('stop');
  });

  test('invalid tool fields get 400 with the parameter named', async () => {
    const cases: Array<[Record<string, unknown>, string, unknown[]?]> = [
      [{ tools: 'f' }, 'tools'],
      [{ tools: [{ type: 'function', function: { parameters: {} } }] }, 'tools[0].function.name'],
      [{ tools: [TOOL], tool_choice: 'sometimes' }, 'tool_choice'],
      [{ tools: [TOOL], tool_choice: { type: 'function', function: { name: 'g' } } }, 'tool_choice'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ tools: [TOOL], parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
      [{ response_format: { type: 'yaml' } }, 'response_format.type'],
      [{ response_format: { type: 'json_schema' } }, 'response_format.json_schema'],
      [
        {},
        'messages[1]',
        [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'nope', content: 'r' },
        ],
      ],
      [
        {},
        'messages[1].tool_calls[0].id',
        [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: '', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
        ],
      ],
    ];
    for (const [extra, param, messages] of cases) {
      const r = await chat(extra, messages);
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(r.json.error.param, JSON.stringify(extra)).toBe(param);
    }
  });

  test('required calls every offered tool once, parallel_tool_calls false only the first, a named choice only that one', async () => {
    const tools = [TOOL, { type: 'function', function: { name: 'g', description: 'd', parameters: SCHEMAS[1] } }];
    const names = (r: { json: any }) => r.json.choices[0].message.tool_calls.map((c: any) => c.function.name);
    expect(names(await chat({ tools, tool_choice: 'required' }))).toEqual(['f', 'g']);
    expect(names(await chat({ tools, tool_choice: 'required', parallel_tool_calls: false }))).toEqual(['f']);
    expect(names(await chat({ tools, tool_choice: { type: 'function', function: { name: 'g' } } }))).toEqual(['g']);
    const none = await chat({ tools, tool_choice: 'none' });
    expect(none.json.choices[0].message.tool_calls).toBeUndefined();
  });

  test('Anthropic: a tool_result follow-up is accepted and answered in text', async () => {
    const r = await post('/v1/messages', {
      model: 'reference-model',
      max_tokens: 8,
      tools: [{ name: 'f', input_schema: SCHEMAS[0] }],
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: { city: 'Paris', unit: 'c' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21' }] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.content[0].type).toBe('text');
  });
});
