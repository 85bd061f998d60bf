import type { Span } from './secrets.js';
import { mergeSpans, REDACTED, secretName, userinfoSpans } from './secrets.js';
import type { Quote, ShellToken, ShellWord } from './shell-words.js';
import { CLOSE, OPEN, shellWords } from './shell-words.js';

/**
 * A command line as trajgate writes it down: the secrets in it replaced by `[redacted]`, by the
 * rules that redact captured headers (event/secrets.ts). Each word is read as the shell would
 * pass it (shell-words.ts), so quotes, escapes and `$'…'` hide nothing; the replacement is made
 * in the line as written, its quotes kept balanced. Redacted:
 * - a header's value whose name says secret: `-H 'Authorization: Bearer x'`, `--header=Cookie:…`,
 *   `X-Api-Key: …` (to the end of its line);
 * - `Bearer TOKEN`; a URL's userinfo password (or lone user name);
 * - a value whose name says secret: `TOKEN=…`, `--password=…`, `--token VALUE`, `?api_key=…`,
 *   `"secret": "…"`;
 * - the password of `-u`/`--user`/`-U`/`--proxy-user USER:PASSWORD`.
 * A value that is only a variable the shell expands (`$TOKEN`, `"Bearer ${TOKEN}"`) shows
 * nothing secret and stays; in single quotes it is a literal, maybe a password (`'$ecret'`).
 * Idempotent: a redacted line is redacted again to itself.
 */
export function redactCommand(line: string): string {
  const { tokens, from: at, to, quote } = shellWords(line);
  const found = new Map<ShellWord, Span[]>();
  const add = (word: ShellToken | undefined, spans: readonly Span[]) => {
    if (word === null || word === undefined || spans.length === 0) return;
    const list = found.get(word) ?? [];
    for (const [a, b] of spans) if (b > a && !revealsNothing(word, a, b, quote)) list.push([a, b]);
    found.set(word, list);
  };
  tokens.forEach((word, k) => {
    if (word === null) return;
    add(word, inWord(word.text));
    const next = tokens[k + 1];
    const flag = FLAG.exec(word.text);
    if (flag !== null && next) {
      const [, dashes, name] = flag as unknown as [string, string, string];
      if (userFlag(dashes, name)) add(next, afterColon(next.text, 0));
      else if (secretName(name)) add(next, [[0, next.text.length]]);
    }
  });
  let out = '';
  let from = 0;
  for (const word of tokens) {
    if (word === null) continue;
    for (const [a, b] of mergeSpans(found.get(word) ?? [])) {
      const q1 = quote[word.at + a] as Quote;
      const q2 = quote[word.at + b - 1] as Quote;
      out += line.slice(from, at[word.at + a]) + REDACTED;
      if (q1 !== q2) out += CLOSE[q1] + OPEN[q2];
      from = to[word.at + b - 1] as number;
    }
  }
  return from === 0 ? line : out + line.slice(from);
}

/** Already redacted, or a variable the shell expands (`$` outside `'…'`): nothing to hide. */
function revealsNothing(word: ShellWord, a: number, b: number, quote: Uint8Array): boolean {
  const text = word.text.slice(a, b);
  if (text === REDACTED) return true;
  if (!REFERENCE.test(text)) return false;
  const q = quote[word.at + a + text.indexOf('$')];
  return q === 0 || q === 2;
}

/** A variable alone, with or without an auth scheme before it (`Bearer ${TOKEN}`). */
const REFERENCE = /^(?:(?:bearer|basic|token|digest)[ \t]+)?\$(?:\{[A-Za-z_]\w*\}|[A-Za-z_]\w*)$/i;
/** A flag alone in its word (its value is the next word). */
const FLAG = /^(--?)([A-Za-z][\w.-]*)$/;
/**
 * `Name: value`. A name is its last 64 characters at most (`-HAuthorization:` is read as
 * `HAuthorization`, judged by its ending), so that a long word is scanned in linear time.
 */
const HEADER = /([A-Za-z][\w-]{0,63})[ \t]*:[ \t]*/g;
/**
 * `name=value` at the word's start or after a separator (`?a=1&token=…`, `--env=TOKEN=…`). No
 * separator is a name character, so each name is scanned once.
 */
const ASSIGN = /(?<=^|[\s?&;,=:/"'{(])-{0,2}([A-Za-z_][\w.-]*)=/g;
/** `"name": value` (JSON, a Python dict). */
const FIELD = /(["'])([A-Za-z_][\w.-]*)\1[ \t]*:[ \t]*/g;
const BEARER = /(?<![A-Za-z0-9_])bearer[ \t]+/gi;
/** `-uUSER:PASS` (curl's `-u`, also within `-su`; `-U` for its proxy). */
const ATTACHED_USER = /^-[A-Za-z]*?[uU](?=.)/;

/** The flags whose value is `user:password` (curl, wget, httpie's `--auth` is secret by name). */
function userFlag(dashes: string, name: string): boolean {
  if (dashes === '--') return name === 'user' || name === 'proxy-user';
  return /^[A-Za-z]*[uU]$/.test(name);
}

/** The secret parts of one word's text. Each rule looks only where its mark is (most words have none). */
function inWord(t: string): Span[] {
  const colon = t.includes(':');
  const equals = t.includes('=');
  const bearer = /bearer/i.test(t);
  if (!colon && !equals && !bearer) return [];
  const spans: Span[] = colon || /%3a/i.test(t) ? userinfoSpans(t) : [];
  // A global pattern searched from `from`: no copy of the rest of a long word per match.
  const endOf = (from: number, stop: RegExp) => {
    stop.lastIndex = from;
    return stop.exec(t)?.index ?? t.length;
  };
  if (colon)
    for (const m of t.matchAll(HEADER))
      if (secretName(m[1] as string))
        spans.push([m.index + m[0].length, endOf(m.index + m[0].length, /[\r\n]/g)]);
  if (equals)
    for (const m of t.matchAll(ASSIGN)) {
      const name = m[1] as string;
      const start = m.index + m[0].length;
      if (name === 'user' || name === 'proxy-user') spans.push(...afterColon(t, start));
      else if (secretName(name))
        spans.push([start, m.index === 0 ? t.length : endOf(start, /[\s&;,"'})]/g)]);
    }
  if (colon)
    for (const m of t.matchAll(FIELD)) {
      if (!secretName(m[2] as string)) continue;
      const start = m.index + m[0].length;
      const quote = t[start];
      if (quote === '"' || quote === "'") spans.push([start + 1, closing(t, start + 1, quote)]);
      else spans.push([start, endOf(start, /[\s,}\]]/g)]);
    }
  if (bearer)
    for (const m of t.matchAll(BEARER))
      spans.push([m.index + m[0].length, endOf(m.index + m[0].length, /[\s"',;]/g)]);
  const attached = colon && !t.startsWith('--') ? ATTACHED_USER.exec(t) : null;
  if (attached !== null) spans.push(...afterColon(t, attached[0].length));
  return spans;
}

/** The password of `user:password` starting at `from`, up to the word's end. */
function afterColon(t: string, from: number): Span[] {
  const colon = t.indexOf(':', from);
  return colon === -1 ? [] : [[colon + 1, t.length]];
}

/** Where a quoted string starting at `from` ends (its closing quote, `\` escaping), or the text. */
function closing(t: string, from: number, quote: string): number {
  for (let i = from; i < t.length; i++) {
    if (t[i] === '\\') i++;
    else if (t[i] === quote) return i;
  }
  return t.length;
}
