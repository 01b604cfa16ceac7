// JSON files the user hands us (servers.json, --baseline, results files for report/compare/merge): a syntax error
// names the file, line and column, and shows the line, where JSON.parse says "position 70" or nothing at all.
import { readFileSync } from 'node:fs';

class JsonFileError extends Error {}

/** Where the first syntax error of `s` is and what was expected there (JSON.parse's messages vary by Node version). */
export function jsonSyntaxError(s: string): { offset: number; what: string } | undefined {
  let i = 0;
  class Stop {
    constructor(readonly what: string) {}
  }
  const fail = (what: string): never => {
    throw new Stop(what);
  };
  const found = () => (i >= s.length ? 'the end of the file' : JSON.stringify(s[i]));
  const ws = () => {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r')) i++;
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const string = () => {
    i++;
    while (i < s.length) {
      const c = s[i]!;
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        const n = s[i + 1] ?? '';
        if (n === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) fail('a \\u escape needs 4 hex digits');
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(n) || !n) fail(`\\${n} is not a JSON escape`);
        i += 2;
        continue;
      }
      if (c < ' ') fail('a raw control character (a line break?) inside a string');
      i++;
    }
    fail('a string that is never closed');
  };
  const value = () => {
    ws();
    const c = s[i];
    if (c === '{') object();
    else if (c === '[') array();
    else if (c === '"') string();
    else scalar(c);
  };
  const scalar = (c: string | undefined) => {
    NUMBER.lastIndex = i;
    if ((c === '-' || (c !== undefined && c >= '0' && c <= '9')) && NUMBER.test(s)) {
      i = NUMBER.lastIndex;
      return;
    }
    for (const lit of ['true', 'false', 'null'])
      if (s.startsWith(lit, i)) {
        i += lit.length;
        return;
      }
    fail(`expected a value, found ${found()}`);
  };
  const object = () => {
    i++;
    ws();
    if (s[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (s[i] !== '"')
        fail(`expected a double-quoted property name, found ${found()}${s[i] === '}' ? ' (a comma before "}"?)' : ''}`);
      string();
      ws();
      if (s[i] !== ':') fail(`expected ':' after the property name, found ${found()}`);
      i++;
      value();
      ws();
      if (s[i] === ',') i++;
      else if (s[i] === '}') {
        i++;
        return;
      } else
        fail(
          `expected ',' or '}' after a property value, found ${found()}${s[i] === '"' ? ' (a missing comma?)' : ''}`,
        );
    }
  };
  const array = () => {
    i++;
    ws();
    if (s[i] === ']') {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (s[i] === ']') fail('expected a value, found "]" (a comma before "]"?)');
      value();
      ws();
      if (s[i] === ',') i++;
      else if (s[i] === ']') {
        i++;
        return;
      } else
        fail(
          `expected ',' or ']' after an array element, found ${found()}${s[i] === '"' || s[i] === '{' ? ' (a missing comma?)' : ''}`,
        );
    }
  };
  try {
    ws();
    if (i >= s.length) fail('the file is empty');
    value();
    ws();
    if (i < s.length) fail(`${found()} after the end of the JSON value`);
    return undefined;
  } catch (e) {
    if (e instanceof Stop) return { offset: i, what: e.what };
    throw e;
  }
}

/** 1-based line and column of an offset. */
function lineColumn(s: string, offset: number): { line: number; column: number; text: string } {
  const before = s.slice(0, offset);
  const line = before.split('\n').length;
  const start = before.lastIndexOf('\n') + 1;
  const end = s.indexOf('\n', offset);
  return { line, column: offset - start + 1, text: s.slice(start, end === -1 ? undefined : end).replace(/\r$/, '') };
}

/** Parse JSON text; a syntax error throws JsonFileError "file:line:column: not valid JSON: what", with the line. */
export function parseJsonText(text: string, file: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // a BOM, as some editors save
  try {
    return JSON.parse(body);
  } catch (e) {
    const at = jsonSyntaxError(body) ?? { offset: 0, what: (e as Error).message };
    const { line, column, text: src } = lineColumn(body, at.offset);
    // The line as it is, cut around the column so a minified file does not flood the terminal.
    const from = Math.max(0, column - 60);
    const shown = src.slice(from, from + 100).replace(/\t/g, ' ');
    throw new JsonFileError(
      `${file}:${line}:${column}: not valid JSON: ${at.what}\n    ${shown}\n    ${' '.repeat(column - 1 - from)}^`,
    );
  }
}

/**
 * Read and parse a JSON file; unreadable or not JSON throws JsonFileError naming the file (`name`, default the path)
 * and, for a syntax error, the line and column.
 */
export function readJsonFile(path: string, name = path): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new JsonFileError(`${name} could not be read (${(e as Error).message})`);
  }
  return parseJsonText(text, name);
}
