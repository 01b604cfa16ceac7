// Tool calls as servers send them, read and judged: OpenAI `message.tool_calls` (non-streamed), `delta.tool_calls`
// (streamed: per call, the first delta names it, later deltas add argument fragments under the same index), and
// Anthropic `tool_use` blocks (`input_json_delta` fragments when streamed). Arguments are validated against the
// parameters schema we sent, with ajv. Pure functions over decoded JSON: the checks decide what each finding means.
//
// References: OpenAI API reference, Chat Completions (the chat completion object: message.tool_calls[] {id, type
// "function", function {name, arguments: "a JSON string"}}; the chunk object: delta.tool_calls[] {index, id, type,
// function}); Anthropic Messages (tool_use content blocks {id, name, input}; streaming: content_block_start with a
// tool_use block, input_json_delta {partial_json}, stop_reason "tool_use").

import type { ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import { isJsonObject } from '../json.ts';
import { jsonPrefix } from './json-prefix.ts';

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------------------
// Argument validation

// User schemas (tool parameters, response formats) get their own instance: they are data, not our file formats.
const ajv = new Ajv2020({ allErrors: true, strict: false });
const compiled = new Map<string, ValidateFunction>();

function validator(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(schema as object);
    compiled.set(key, v);
  }
  return v;
}

/** Validation problems of a value against a JSON Schema, one line each ("/city must be equal to one of …"). */
export function schemaProblems(value: unknown, schema: unknown): string[] {
  const v = validator(schema);
  if (v(value)) return [];
  return (v.errors ?? []).map((e) => {
    const extra =
      e.keyword === 'enum'
        ? ` ${JSON.stringify((e.params as { allowedValues?: unknown }).allowedValues)}`
        : e.keyword === 'additionalProperties'
          ? ` (${JSON.stringify((e.params as { additionalProperty?: unknown }).additionalProperty)})`
          : '';
    return `${e.instancePath || '(root)'} ${e.message ?? e.keyword}${extra}`;
  });
}

interface ArgumentsVerdict {
  /** 'valid': parses and validates; 'invalid-json'; 'not-object'; 'schema': parses but breaks the schema; 'not-string'. */
  state: 'valid' | 'invalid-json' | 'not-object' | 'schema' | 'not-string';
  value?: unknown;
  problems: string[];
}

/** OpenAI `function.arguments`: a string holding a JSON object that validates against the parameters schema. */
export function judgeArguments(args: unknown, schema: unknown): ArgumentsVerdict {
  if (typeof args !== 'string')
    return {
      state: 'not-string',
      problems: [`arguments is ${args === null ? 'null' : typeof args}, not a JSON string`],
    };
  const p = jsonPrefix(args);
  if (p.state !== 'complete') {
    return {
      state: 'invalid-json',
      problems: [
        p.state === 'prefix'
          ? 'arguments end before the JSON does (incomplete JSON)'
          : `arguments are not JSON: ${p.reason} at offset ${p.at}`,
      ],
    };
  }
  return judgeValue(p.value, schema);
}

/** A parsed arguments / input value: an object that validates. */
export function judgeValue(value: unknown, schema: unknown): ArgumentsVerdict {
  if (!isJsonObject(value))
    return {
      state: 'not-object',
      value,
      problems: [`arguments are ${JSON.stringify(value)?.slice(0, 60)}, not a JSON object`],
    };
  const problems = schemaProblems(value, schema);
  return { state: problems.length ? 'schema' : 'valid', value, problems };
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI, non-streamed

export interface ToolCall {
  id: unknown;
  type: unknown;
  name: unknown;
  arguments: unknown;
  /** Stream only: the index the call's deltas carried (undefined when they carried none). */
  index?: unknown;
}

export interface ChatAnswer {
  message?: Obj;
  content: unknown;
  finishReason: unknown;
  calls: ToolCall[];
  /** Why no message could be read (not a chat.completion). */
  problem?: string;
}

/** choices[0] of a chat.completion: message, content, finish_reason and tool calls. */
export function chatAnswer(json: unknown): ChatAnswer {
  const choice = isJsonObject(json) && Array.isArray(json.choices) ? json.choices[0] : undefined;
  if (!isJsonObject(choice) || !isJsonObject(choice.message))
    return { content: undefined, finishReason: undefined, calls: [], problem: 'no choices[0].message in the response' };
  const m = choice.message;
  const raw = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  const calls = raw.map((c): ToolCall => {
    const f = isJsonObject(c) && isJsonObject(c.function) ? c.function : {};
    return {
      id: isJsonObject(c) ? c.id : undefined,
      type: isJsonObject(c) ? c.type : undefined,
      name: f.name,
      arguments: f.arguments,
    };
  });
  return { message: m, content: m.content, finishReason: choice.finish_reason, calls };
}

/** What is wrong with one call's envelope: id, type, name (arguments are judged apart). */
export function callShapeProblems(c: ToolCall, offered: readonly string[], label: string): string[] {
  const out: string[] = [];
  if (typeof c.id !== 'string')
    out.push(`${label}: id is ${c.id === undefined ? 'missing' : JSON.stringify(c.id)}, expected a non-empty string`);
  else if (c.id === '')
    out.push(`${label}: id is "" (an empty string), expected a non-empty id the follow-up's tool_call_id can name`);
  if (c.type !== 'function') out.push(`${label}: type is ${JSON.stringify(c.type) ?? 'missing'}, expected "function"`);
  if (typeof c.name !== 'string' || !offered.includes(c.name))
    out.push(
      `${label}: function.name ${JSON.stringify(c.name) ?? 'missing'} is not one of the offered tools ${JSON.stringify(offered)}`,
    );
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI, streamed

export interface StreamedCalls {
  calls: ToolCall[];
  /** Protocol problems of the deltas (index, first-delta fields, id changes). */
  problems: string[];
  /** Events carrying argument text, per call (1 = the arguments arrived whole). */
  fragmentEvents: number[];
  /** Content text streamed beside the calls. */
  content: string;
  finishReasons: string[];
}

/**
 * Assemble `delta.tool_calls` from chunk objects. Deltas without an index cannot be assigned reliably; they are
 * grouped the way lenient clients do (a delta with an id starts a call, others continue the last one) and reported.
 */
export function streamedToolCalls(chunks: ReadonlyArray<{ json: unknown }>): StreamedCalls {
  const calls: ToolCall[] = [];
  const fragments: number[] = [];
  const problems: string[] = [];
  const byIndex = new Map<unknown, number>();
  let content = '';
  const finishReasons: string[] = [];
  let noIndex = 0;
  for (const [n, ch] of chunks.entries()) {
    const choice = isJsonObject(ch.json) && Array.isArray(ch.json.choices) ? ch.json.choices[0] : undefined;
    if (!isJsonObject(choice)) continue;
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '')
      finishReasons.push(choice.finish_reason);
    const delta = isJsonObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string') content += delta.content;
    if (!Array.isArray(delta.tool_calls)) continue;
    for (const d of delta.tool_calls) {
      if (!isJsonObject(d)) {
        problems.push(`chunk ${n}: a tool_calls entry is ${JSON.stringify(d)}, not an object`);
        continue;
      }
      const f = isJsonObject(d.function) ? d.function : {};
      const hasIndex = Number.isInteger(d.index);
      if (!hasIndex) noIndex++;
      let k = hasIndex ? byIndex.get(d.index) : typeof d.id === 'string' && d.id !== '' ? undefined : calls.length - 1;
      if (k === undefined || k < 0) {
        // A new call: its first delta must name it.
        const label = `call ${hasIndex ? `index ${d.index}` : `#${calls.length}`} (chunk ${n})`;
        const missing = [
          !hasIndex && 'index',
          (typeof d.id !== 'string' || d.id === '') && `id${d.id === '' ? ' (empty string)' : ''}`,
          d.type !== 'function' && 'type "function"',
          (typeof f.name !== 'string' || f.name === '') && 'function.name',
        ].filter(Boolean);
        if (missing.length) problems.push(`${label}: its first delta lacks ${missing.join(', ')}`);
        calls.push({ id: d.id, type: d.type, name: f.name, arguments: '', index: d.index });
        fragments.push(0);
        k = calls.length - 1;
        if (hasIndex) byIndex.set(d.index, k);
      } else {
        const c = calls[k]!;
        if (typeof d.id === 'string' && d.id !== '' && c.id !== d.id)
          problems.push(
            `chunk ${n}: call index ${JSON.stringify(d.index)} changes id from ${JSON.stringify(c.id)} to ${JSON.stringify(d.id)}`,
          );
        if (typeof f.name === 'string' && f.name !== '' && c.name !== f.name && c.name !== undefined)
          problems.push(
            `chunk ${n}: call index ${JSON.stringify(d.index)} changes function.name from ${JSON.stringify(c.name)} to ${JSON.stringify(f.name)}`,
          );
        if (c.name === undefined && typeof f.name === 'string') c.name = f.name;
      }
      if (typeof f.arguments === 'string' && f.arguments !== '') {
        calls[k]!.arguments = (calls[k]!.arguments as string) + f.arguments;
        fragments[k]!++;
      }
    }
  }
  if (noIndex)
    problems.unshift(`${noIndex} tool-call delta(s) without an integer index (clients assemble calls by index)`);
  return { calls, problems, fragmentEvents: fragments, content, finishReasons };
}

// ---------------------------------------------------------------------------------------------------------------
// Anthropic

interface ToolUse {
  id: unknown;
  name: unknown;
  input: unknown /** stream: the concatenated partial_json */;
  json?: string;
}

export interface AnthropicAnswer {
  stopReason: unknown;
  toolUses: ToolUse[];
  text: string;
  problem?: string;
}

/** A non-streamed Messages response: tool_use blocks, text and stop_reason. */
export function anthropicAnswer(json: unknown): AnthropicAnswer {
  if (!isJsonObject(json) || !Array.isArray(json.content))
    return { stopReason: undefined, toolUses: [], text: '', problem: 'no content array in the response' };
  const toolUses: ToolUse[] = [];
  let text = '';
  for (const b of json.content) {
    if (!isJsonObject(b)) continue;
    if (b.type === 'tool_use') toolUses.push({ id: b.id, name: b.name, input: b.input });
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
  }
  return { stopReason: json.stop_reason, toolUses, text };
}

/** A streamed Messages response: tool_use blocks from content_block_start + input_json_delta fragments. */
export function anthropicStreamedToolUses(
  chunks: ReadonlyArray<{ json: unknown }>,
): AnthropicAnswer & { problems: string[]; fragmentEvents: number[] } {
  const blocks = new Map<unknown, ToolUse & { fragments: number }>();
  const problems: string[] = [];
  let stopReason: unknown;
  let text = '';
  for (const [n, ch] of chunks.entries()) {
    const e = ch.json;
    if (!isJsonObject(e)) continue;
    if (e.type === 'content_block_start' && isJsonObject(e.content_block) && e.content_block.type === 'tool_use') {
      const b = e.content_block;
      if (blocks.has(e.index))
        problems.push(`event ${n}: a second content_block_start for index ${JSON.stringify(e.index)}`);
      blocks.set(e.index, { id: b.id, name: b.name, input: b.input, json: '', fragments: 0 });
    }
    if (e.type === 'content_block_delta' && isJsonObject(e.delta)) {
      if (e.delta.type === 'text_delta' && typeof e.delta.text === 'string') text += e.delta.text;
      if (e.delta.type === 'input_json_delta') {
        const b = blocks.get(e.index);
        if (!b)
          problems.push(
            `event ${n}: input_json_delta for index ${JSON.stringify(e.index)}, which no tool_use content_block_start opened`,
          );
        else if (typeof e.delta.partial_json === 'string') {
          b.json += e.delta.partial_json;
          b.fragments++;
        }
      }
    }
    if (e.type === 'message_delta' && isJsonObject(e.delta) && e.delta.stop_reason !== undefined)
      stopReason = e.delta.stop_reason;
  }
  const list = [...blocks.values()];
  return { stopReason, toolUses: list, text, problems, fragmentEvents: list.map((b) => b.fragments) };
}

/** What is wrong with one tool_use block's envelope (id, name). */
export function toolUseShapeProblems(u: ToolUse, offered: readonly string[], label: string): string[] {
  const out: string[] = [];
  if (typeof u.id !== 'string' || u.id === '')
    out.push(`${label}: id is ${JSON.stringify(u.id) ?? 'missing'}, expected a non-empty string`);
  if (typeof u.name !== 'string' || !offered.includes(u.name))
    out.push(
      `${label}: name ${JSON.stringify(u.name) ?? 'missing'} is not one of the offered tools ${JSON.stringify(offered)}`,
    );
  return out;
}
