import type { Spelling } from '../event/sentinel-scan.js';
import { SentinelScanner } from '../event/sentinel-scan.js';
import { swapBase64 } from './credential-base64.js';
import { jsonEscape, percentEncode, replaceNeedles } from './credential-spellings.js';

/** A credential to swap in: its sentinel, its value and where the value goes when placed. */
export interface SwapCredential {
  readonly name: string;
  readonly sentinel: string;
  readonly value: string;
  readonly header?: string;
  readonly scheme?: string;
  readonly query?: string;
}

/**
 * How a sentinel written as is is read where it stands, so how its value is written: as is (a
 * header, a text or multipart body, decoded base64), percent-encoded (a URL, a form body: a
 * value's `+` or `&` would otherwise read as a space or a new field), JSON-escaped (a JSON body).
 */
export type Context = 'raw' | 'percent' | 'json';

/** The credentials, compiled once per list (the gateway keeps a list until reload). */
export interface Kit {
  readonly credentials: readonly SwapCredential[];
  readonly scanner: SentinelScanner;
  readonly sentinels: readonly Buffer[];
  readonly values: Readonly<Record<Context, readonly Buffer[]>>;
  /** Any mix of `%XX` and literal characters / of `\u00XX` and literal ones (RFC 8259 § 7). */
  readonly percent: readonly RegExp[];
  readonly json: readonly RegExp[];
  /** The shortest base64 a sentinel can be inside. */
  readonly minBase64: number;
}

const kits = new WeakMap<readonly SwapCredential[], Kit>();

export function kitFor(credentials: readonly SwapCredential[]): Kit {
  let kit = kits.get(credentials);
  if (kit === undefined) kits.set(credentials, (kit = compile(credentials)));
  return kit;
}

/** `[xX]` for a hex digit that has two cases. */
const hexPattern = (byte: number) =>
  [...byte.toString(16).padStart(2, '0')]
    .map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d))
    .join('');
/** Sentinels are word characters (SENTINEL): none needs escaping in a pattern. */
const spelledPattern = (sentinel: string, escape: (hex: string) => string) =>
  [...sentinel].map((c) => `(?:${c}|${escape(hexPattern(c.charCodeAt(0)))})`).join('');

function compile(credentials: readonly SwapCredential[]): Kit {
  const bytes = (f: (v: string) => string) => credentials.map((c) => Buffer.from(f(c.value)));
  return {
    credentials,
    scanner: new SentinelScanner(credentials),
    sentinels: credentials.map((c) => Buffer.from(c.sentinel)),
    values: { raw: bytes((v) => v), percent: bytes(percentEncode), json: bytes(jsonEscape) },
    percent: credentials.map(
      (c) =>
        new RegExp(
          spelledPattern(c.sentinel, (h) => `%${h}`),
          'g',
        ),
    ),
    // Preceded by an even number of backslashes: `\\u0074` is a backslash and text, no escape.
    json: credentials.map(
      (c) =>
        new RegExp(
          String.raw`(?<=(?:^|[^\\])(?:\\\\)*)` + spelledPattern(c.sentinel, (h) => `\\\\u00${h}`),
          'g',
        ),
    ),
    minBase64: Math.min(...credentials.map((c) => Math.floor((c.sentinel.length * 4) / 3))),
  };
}

/**
 * Replaces the sentinels in `bytes` spelled as `found` says: as is by the value written for
 * `context`; percent-encoded and JSON-escaped by the value so encoded; inside base64 by the
 * value encoded again in the run's spelling. Answers null where nothing was replaced.
 */
export function swapText(
  bytes: Buffer,
  kit: Kit,
  context: Context,
  found: ReadonlySet<Spelling>,
  used: Set<string>,
): Buffer | null {
  const name = (i: number) => kit.credentials[i]!.name;
  const raw = replaceNeedles(bytes, kit.sentinels, kit.values[context]);
  raw.hits?.forEach((i) => used.add(name(i)));
  const spelled = [...found].filter((s) => s !== 'raw' && s !== 'wrapped');
  if (spelled.length === 0) return raw.hits === null ? null : raw.out;
  let text = raw.out.toString('latin1');
  const before = text;
  const pass = (patterns: readonly RegExp[], values: readonly Buffer[]) =>
    patterns.forEach((re, i) => {
      text = text.replace(re, () => (used.add(name(i)), values[i]!.toString('latin1')));
    });
  if (found.has('percent')) pass(kit.percent, kit.values.percent);
  if (found.has('json')) pass(kit.json, kit.values.json);
  if (spelled.some((s) => s.endsWith('base64'))) {
    text = swapBase64(text, kit.minBase64, (decoded) => {
      const inner = kit.scanner.scan(decoded);
      if (inner.length === 0) return null;
      return swapText(decoded, kit, 'raw', new Set(inner.map((f) => f.spelling)), used);
    });
  }
  if (text === before) return raw.hits === null ? null : raw.out;
  return Buffer.from(text, 'latin1');
}

/** A latin1 string (a header value, a path) as its bytes, swapped; null where unchanged. */
export function swapLatin1(
  text: string,
  kit: Kit,
  context: Context,
  used: Set<string>,
): { readonly text: string; readonly left: readonly Found[] } | null {
  const bytes = Buffer.from(text, 'latin1');
  const found = kit.scanner.scan(bytes);
  if (found.length === 0) return null;
  const out = swapText(bytes, kit, context, spellings(found), used) ?? bytes;
  return { text: out.toString('latin1'), left: kit.scanner.scan(out) };
}

export type Found = ReturnType<SentinelScanner['scan']>[number];

export const spellings = (found: readonly Found[]): ReadonlySet<Spelling> =>
  new Set(found.map((f) => f.spelling));
