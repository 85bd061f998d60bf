/**
 * What trajgate never writes down: the values of credential header fields, the password of a
 * URL's userinfo, and values whose name says they are secret. One set of rules for captures
 * (action/capture.ts), the log (log.ts) and command lines (event/command-line.ts).
 */

/**
 * Header fields whose values are credentials: Authorization and Proxy-Authorization (RFC 9110
 * § 11.6.2, § 11.7.2), Cookie and Set-Cookie (RFC 6265 § 4).
 */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
]);

/** What stands where a secret was. */
export const REDACTED = '[redacted]';

export const isSecretHeader = (name: string): boolean => SECRET_HEADERS.has(name.toLowerCase());

/** Name parts that make a value secret (`GITHUB_TOKEN`, `--password`, `apiKey`, `X-Auth-Token`). */
const SECRET_PARTS: ReadonlySet<string> = new Set([
  'pass',
  'passphrase',
  'auth',
  'cookie',
  'bearer',
  'credential',
  'credentials',
  'apikey',
  'accesskey',
  'privatekey',
  'secretkey',
]);
/** Part endings that do (`accesstoken`, `clientsecret`, `dbpassword`). */
const SECRET_ENDINGS = ['token', 'secret', 'password', 'passwd', 'authorization'];
/** A last part that names where a secret is or what kind it is, not the secret itself. */
const NOT_THE_VALUE: ReadonlySet<string> = new Set([
  'file',
  'path',
  'dir',
  'url',
  'uri',
  'type',
  'name',
  'id',
  'jar',
  'stdin',
]);

/**
 * Whether a variable, flag, header or field name says its value is secret: a part (split at
 * `-`, `_`, `.` and lower-to-upper case) that is or ends in token, secret, password, auth,
 * cookie, a credential header's name…, or a last part `key` (`API_KEY`, `--key`). Not when the
 * last part says where the secret is (`TOKEN_FILE`, `--password-stdin`).
 */
export function secretName(name: string): boolean {
  let secret = judged.get(name);
  if (secret === undefined) {
    // Bounded: a command line of many distinct names must not grow it without end.
    if (judged.size >= 1024) judged.clear();
    judged.set(name, (secret = judgeName(name)));
  }
  return secret;
}

/** Names already judged: a command line repeats a few names many times. */
const judged = new Map<string, boolean>();

function judgeName(name: string): boolean {
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[-_.]+/)
    .filter(Boolean);
  const last = parts.at(-1);
  if (last === undefined || NOT_THE_VALUE.has(last)) return false;
  if (last === 'key') return true;
  const whole = name.toLowerCase();
  if ([...SECRET_HEADERS].some((h) => whole.endsWith(h))) return true;
  return parts.some((p) => SECRET_PARTS.has(p) || SECRET_ENDINGS.some((e) => p.endsWith(e)));
}

/** A half-open range of a text. */
export type Span = readonly [number, number];

/**
 * `scheme://` (or its percent-encoded form, a URL inside a URL's query). Bounded, so that a
 * long run of name characters costs a few steps per character, not one per character after it.
 */
const SCHEME = /[A-Za-z][A-Za-z0-9+.-]{0,31}(?::\/\/|%3A%2F%2F)/gi;
/** Where an authority ends (WHATWG URL: `/ ? #`, and `\` for special schemes), or the text does. */
const AUTHORITY_END = /[/?#\\\s"'<>]|%2F|%3F|%23/gi;

/**
 * The userinfo secrets of every URL in `text`: its password (after the first `:`), or, with no
 * password, its user name (a token is often put there: `https://TOKEN@host`). The userinfo
 * ends at the authority's last `@`, as WHATWG URL parsers read it; `%3A` and `%40` count as
 * `:` and `@` too, so an encoded URL (a redirect parameter) is read as it would be decoded.
 */
export function userinfoSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (const m of text.matchAll(SCHEME)) {
    const start = m.index + m[0].length;
    AUTHORITY_END.lastIndex = start;
    const authority = text.slice(start, AUTHORITY_END.exec(text)?.index ?? text.length);
    const at = Math.max(authority.lastIndexOf('@'), authority.toLowerCase().lastIndexOf('%40'));
    if (at <= 0) continue;
    const colon = /:|%3A/i.exec(authority.slice(0, at));
    if (colon === null) spans.push([start, start + at]);
    else if (colon.index + colon[0].length < at)
      spans.push([start + colon.index + colon[0].length, start + at]);
  }
  return spans;
}

/** Spans in order, overlapping or touching ones joined. */
export function mergeSpans(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last !== undefined && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** `text` with the userinfo secrets of its URLs redacted (a capture's request URL). */
export function redactUserinfo(text: string): string {
  const spans = mergeSpans(userinfoSpans(text));
  if (spans.length === 0) return text;
  let out = '';
  let from = 0;
  for (const [a, b] of spans) {
    out += text.slice(from, a) + REDACTED;
    from = b;
  }
  return out + text.slice(from);
}
