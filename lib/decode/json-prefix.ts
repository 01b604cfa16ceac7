// Is a text a complete JSON document, the beginning of one, or neither? A response cut by max_tokens is judged
// by this: a cut that could still have become valid JSON is no evidence against the server (inconclusive); text
// that can never become JSON shows the output was not constrained at all (a failure), whether it was cut or not.

type JsonPrefix =
  | { state: 'complete'; value: unknown }
  | { state: 'prefix' }
  | { state: 'invalid'; at: number; reason: string };

const WS = new Set([' ', '\t', '\n', '\r']);
const LITERALS = ['true', 'false', 'null'];

/** Classify `text` (RFC 8259 JSON text, surrounding whitespace allowed). */
export function jsonPrefix(text: string): JsonPrefix {
  try {
    return { state: 'complete', value: JSON.parse(text) };
  } catch {
    // not complete: is it a viable beginning?
  }
  const bad = scan(text);
  return bad ?? { state: 'prefix' };
}

type Expect = 'value' | 'key' | 'colon' | 'comma-or-close' | 'end';

/** Returns the first impossible position, or undefined when every character so far fits some JSON text. */
function scan(s: string): { state: 'invalid'; at: number; reason: string } | undefined {
  const stack: Array<'{' | '['> = [];
  let expect = 'value' as Expect; // also set by afterValue() (a closure: no narrowing)
  let first = true; // just after '[' or '{': a close is allowed
  let i = 0;
  const invalid = (reason: string) => ({ state: 'invalid' as const, at: i, reason });
  const afterValue = () => {
    expect = stack.length ? 'comma-or-close' : 'end';
    first = false;
  };
  while (i < s.length) {
    const c = s[i]!;
    if (WS.has(c)) {
      i++;
      continue;
    }
    switch (expect) {
      case 'end':
        return invalid(`text after the JSON value: ${JSON.stringify(s.slice(i, i + 20))}`);
      case 'colon':
        if (c !== ':') return invalid(`expected ':' after an object key, got ${JSON.stringify(c)}`);
        expect = 'value';
        i++;
        continue;
      case 'comma-or-close': {
        const top = stack.at(-1);
        if (c === ',') {
          expect = top === '{' ? 'key' : 'value';
          first = false;
          i++;
          continue;
        }
        if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
          stack.pop();
          i++;
          afterValue();
          continue;
        }
        return invalid(`expected ',' or '${top === '{' ? '}' : ']'}', got ${JSON.stringify(c)}`);
      }
      case 'key': {
        if (c === '}' && first) {
          stack.pop();
          i++;
          afterValue();
          continue;
        }
        if (c !== '"') return invalid(`expected an object key (a string), got ${JSON.stringify(c)}`);
        const end = stringEnd(s, i);
        if (end === 'open') return undefined;
        if (typeof end === 'object') {
          i = end.at;
          return invalid(end.reason);
        }
        i = end;
        expect = 'colon';
        continue;
      }
      case 'value': {
        if (c === '{' || c === '[') {
          stack.push(c);
          expect = c === '{' ? 'key' : 'value';
          first = true;
          i++;
          continue;
        }
        if (c === ']' && first && stack.at(-1) === '[') {
          stack.pop();
          i++;
          afterValue();
          continue;
        }
        if (c === '"') {
          const end = stringEnd(s, i);
          if (end === 'open') return undefined;
          if (typeof end === 'object') {
            i = end.at;
            return invalid(end.reason);
          }
          i = end;
          afterValue();
          continue;
        }
        if (c === '-' || (c >= '0' && c <= '9')) {
          const m = /^-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?/.exec(s.slice(i))!;
          i += m[0].length;
          if (i >= s.length) return undefined;
          if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(m[0]))
            return invalid(`malformed number ${JSON.stringify(m[0])}`);
          afterValue();
          continue;
        }
        const lit = LITERALS.find(
          (l) => s.startsWith(l.slice(0, Math.min(l.length, s.length - i)), i) && s[i] === l[0],
        );
        if (lit) {
          if (s.length - i < lit.length) return undefined;
          i += lit.length;
          afterValue();
          continue;
        }
        return invalid(`expected a JSON value, got ${JSON.stringify(s.slice(i, i + 20))}`);
      }
    }
  }
  return undefined;
}

/** Index after the closing quote of the string starting at `i`, 'open' if the text ends inside it, or the fault. */
function stringEnd(s: string, i: number): number | 'open' | { at: number; reason: string } {
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j]!;
    if (c === '"') return j + 1;
    if (c === '\\') {
      const e = s[j + 1];
      if (e === undefined) return 'open';
      if (e === 'u') {
        const hex = s.slice(j + 2, j + 6);
        if (!/^[0-9a-fA-F]*$/.test(hex)) return { at: j, reason: `bad \\u escape in a string` };
        if (hex.length < 4) return 'open';
        j += 5;
        continue;
      }
      if (!'"\\/bfnrt'.includes(e)) return { at: j, reason: `bad escape \\${e} in a string` };
      j++;
      continue;
    }
    if (c.charCodeAt(0) < 0x20) return { at: j, reason: 'unescaped control character in a string' };
  }
  return 'open';
}
