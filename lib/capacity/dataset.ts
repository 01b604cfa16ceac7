// Prompts from a dataset file the user names: JSONL with one OpenAI `messages` array per line (or an object holding
// one), or ShareGPT's own shape, a JSON array of { conversations: [{ from, value }] }. A malformed file is one clear
// error naming the file and the line (or entry) at fault, never a run that silently sends fewer prompts.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { jsonSyntaxError, parseJsonText } from '../config/json-file.ts';

interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface Dataset {
  file: string;
  format: 'jsonl-messages' | 'sharegpt';
  /** Each prompt: the messages up to and including the last user turn. */
  prompts: ChatMessage[][];
}

export class DatasetError extends Error {}

/** What one record looks like, appended to every error about a record's shape. */
const JSONL_RECORD =
  'each line is one JSON value: {"messages": [{"role": "user", "content": "Hello"}]} or that array alone';
const SHAREGPT_RECORD =
  'ShareGPT JSON is one array of {"conversations": [{"from": "human", "value": "Hello"}, {"from": "gpt", "value": "Hi"}]}';

const ROLES = new Set(['system', 'user', 'assistant']);
/** ShareGPT speaker names → OpenAI roles. */
const SHAREGPT_ROLES: Record<string, ChatMessage['role']> = {
  human: 'user',
  user: 'user',
  gpt: 'assistant',
  assistant: 'assistant',
  chatgpt: 'assistant',
  bing: 'assistant',
  bard: 'assistant',
  system: 'system',
};

/** Up to the last user turn: what a client would send to get the next answer. */
function promptOf(messages: ChatMessage[], where: string): ChatMessage[] {
  let last = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  if (last < 0) throw new DatasetError(`${where}: no user message to answer`);
  return messages.slice(0, last + 1);
}

function messagesOf(v: unknown, where: string): ChatMessage[] {
  const arr = Array.isArray(v) ? v : (v as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(arr) || arr.length === 0)
    throw new DatasetError(`${where}: expected a non-empty array of messages (or an object with "messages")`);
  return arr.map((m, i) => {
    const r = (m as { role?: unknown } | null)?.role;
    const c = (m as { content?: unknown } | null)?.content;
    if (typeof r !== 'string' || !ROLES.has(r))
      throw new DatasetError(`${where}: message ${i} has role ${JSON.stringify(r)} (system, user or assistant)`);
    if (typeof c !== 'string') throw new DatasetError(`${where}: message ${i} has no string "content"`);
    return { role: r as ChatMessage['role'], content: c };
  });
}

function parseJsonl(text: string, file: string): ChatMessage[][] {
  const out: ChatMessage[][] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    const where = `${file} line ${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      const at = jsonSyntaxError(line);
      throw new DatasetError(
        `${file}:${i + 1}:${(at?.offset ?? 0) + 1}: not JSON: ${at?.what ?? (e as Error).message} (${JSONL_RECORD})`,
      );
    }
    try {
      out.push(promptOf(messagesOf(v, where), where));
    } catch (e) {
      throw new DatasetError(`${(e as Error).message} (${JSONL_RECORD})`);
    }
  });
  return out;
}

function parseShareGpt(data: unknown[], file: string): ChatMessage[][] {
  const out: ChatMessage[][] = [];
  data.forEach((entry, i) => {
    const where = `${file} entry ${i}`;
    const conv = (entry as { conversations?: unknown } | null)?.conversations;
    if (!Array.isArray(conv)) throw new DatasetError(`${where}: no "conversations" array`);
    const messages = conv.map((t, j) => {
      const from = (t as { from?: unknown } | null)?.from;
      const value = (t as { value?: unknown } | null)?.value;
      const role = typeof from === 'string' ? SHAREGPT_ROLES[from.toLowerCase()] : undefined;
      if (!role)
        throw new DatasetError(`${where}: turn ${j} has "from" ${JSON.stringify(from)} (human, gpt or system)`);
      if (typeof value !== 'string') throw new DatasetError(`${where}: turn ${j} has no string "value"`);
      return { role, content: value };
    });
    // ShareGPT dumps hold conversations that start with the model; they have no prompt and are left out, as peers do.
    if (messages.some((m) => m.role === 'user')) out.push(promptOf(messages, where));
  });
  return out;
}

/**
 * Parse a dataset's text. JSONL when the file is named *.jsonl or does not start with "[", or when its first line is
 * a JSON value on its own (a JSONL line may itself be a messages array); otherwise ShareGPT's single JSON array.
 */
export function parseDataset(text: string, file: string): Dataset {
  const name = basename(file);
  const trimmed = text.trimStart();
  if (!trimmed) throw new DatasetError(`${name}: the file is empty (${JSONL_RECORD})`);
  const firstLine = trimmed.split(/\r?\n/, 1)[0]!;
  const firstLineIsJson = (() => {
    try {
      JSON.parse(firstLine);
      return firstLine.trim() !== trimmed.trim();
    } catch {
      return false;
    }
  })();
  if (!/\.jsonl$/i.test(name) && trimmed.startsWith('[') && !firstLineIsJson) {
    let data: unknown;
    try {
      data = parseJsonText(text, name);
    } catch (e) {
      throw new DatasetError(
        `${(e as Error).message}\n  (it starts with "[", so it is read as ShareGPT JSON; ${JSONL_RECORD} in a .jsonl file)`,
      );
    }
    if (!Array.isArray(data)) throw new DatasetError(`${name}: ${SHAREGPT_RECORD}`);
    let prompts: ChatMessage[][];
    try {
      prompts = parseShareGpt(data, name);
    } catch (e) {
      throw new DatasetError(`${(e as Error).message} (${SHAREGPT_RECORD})`);
    }
    if (!prompts.length) throw new DatasetError(`${name}: no conversation with a human turn (${SHAREGPT_RECORD})`);
    return { file: name, format: 'sharegpt', prompts };
  }
  const prompts = parseJsonl(text, name);
  if (!prompts.length) throw new DatasetError(`${name}: no prompt in the file (${JSONL_RECORD})`);
  return { file: name, format: 'jsonl-messages', prompts };
}

export function loadDataset(path: string): Dataset {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new DatasetError(`dataset ${path}: ${(e as Error).message}`);
  }
  return parseDataset(text, path);
}
