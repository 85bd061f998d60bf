import { TrajgateError } from '../errors.js';

/** Deeper than any JSON-RPC message needs; parsers differ on where they give up. */
const MAX_DEPTH = 64;

/**
 * JSON.parse, refusing what other parsers read differently (E_EVENT_INVALID): a key twice in
 * one object (JSON.parse keeps the last; others keep the first or fail), a number too large
 * for a double (JSON.parse makes it Infinity, re-serialised as null), nesting past MAX_DEPTH.
 */
export function parseStrictJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalid(`body is not valid JSON (${(err as Error).message})`);
  }
  check(text);
  return value;
}

/** Walks text that JSON.parse accepted: only structure, strings and numbers need reading. */
function check(text: string): void {
  // One entry per open container: the keys seen so far (objects) or null (arrays).
  const open: (Set<string> | null)[] = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      open.push(c === 0x7b ? new Set() : null);
      if (open.length > MAX_DEPTH) throw invalid(`the body nests deeper than ${MAX_DEPTH} levels`);
      keyNext = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
      keyNext = false;
    } else if (c === 0x2c) {
      keyNext = open.at(-1) instanceof Set;
    } else if (c === 0x22) {
      const end = stringEnd(text, i);
      const keys = open.at(-1);
      if (keyNext && keys) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key)) {
          throw invalid(`the key ${JSON.stringify(key.slice(0, 64))} appears twice in one object`);
        }
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < text.length && NUMBER_CHAR.test(text[end] as string)) end++;
      const literal = text.slice(i, end);
      if (!Number.isFinite(Number(literal))) {
        throw invalid(`the number ${literal.slice(0, 40)} is too large to be read the same way`);
      }
      i = end - 1;
    }
  }
}

const NUMBER_CHAR = /[0-9eE.+-]/;

/** Index of the quote closing the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}

function invalid(message: string): TrajgateError {
  return new TrajgateError('E_EVENT_INVALID', message);
}
