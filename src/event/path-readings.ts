/**
 * The ways a server may read a URL path (percent-encoded, as the WHATWG parser leaves it, so
 * literal `.`/`..` and `\` are already resolved): what a pattern naming a path is compared
 * with. RFC 3986 § 6.2.2.2 makes `%61` the same as `a`; beyond it, servers decode the whole
 * path once or more (`%2f` and `%5c` then separate segments), drop `;` parameters per segment
 * (Tomcat, Spring), merge repeated `/` (nginx), drop trailing dots and spaces (IIS, Windows),
 * decode `%uXXXX` (IIS), fold full-width look-alikes (NFKC) and match case-insensitively.
 * A deny or a rule fires when ANY reading is under its path; an allow holds only when EVERY
 * reading is. Every reading is lower-cased: case never separates two paths here.
 */
export interface PathReading {
  readonly path: string;
  /** How it was read, for a reason: `percent-decoded, ignoring case`. */
  readonly how: string;
}

/** Decodings tried, as in network-target.ts's pathProblem (a deeper one is refused there). */
const ROUNDS = 3;
const ESCAPE = /%[0-9a-fA-F]{2}/g;
const ANY_ESCAPE = /%(?:[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})/i;
const UNICODE_ESCAPE = /%u[0-9a-fA-F]{4}/gi;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const SEPARATOR = /[/\\]/;
const DOTS = /^\.{1,2}$/;
/**
 * Nothing another reading would change: printable ASCII without an escape, `;`, `?`, `#`, `\`,
 * capital, `//` or a segment ending in `.`.
 */
const PLAIN = /^(?![^]*(?:\/\/|\.(?:\/|$)))(?:(?![%;?#\\A-Z])[!-~])*$/;

const byte = (e: string) => String.fromCharCode(parseInt(e.slice(1), 16));
/** IIS's `%uXXXX`, as the UTF-8 bytes (latin1) the other escapes decode to. */
const utf8Bytes = (e: string) =>
  Buffer.from(String.fromCharCode(parseInt(e.slice(2), 16)), 'utf8').toString('latin1');

/** The path as sent, then decoded step by step: each with how it was decoded. */
function decodings(path: string): [string, string][] {
  const out: [string, string][] = [[path, '']];
  if (!path.includes('%')) return out;
  const unreserved = path.replace(ESCAPE, (e) => (UNRESERVED.test(byte(e)) ? byte(e) : e));
  out.push([unreserved, 'with unreserved characters decoded']);
  let bytes = path;
  for (let round = 1; round <= ROUNDS && ANY_ESCAPE.test(bytes); round++) {
    bytes = bytes.replace(ESCAPE, byte).replace(UNICODE_ESCAPE, utf8Bytes);
    const text = Buffer.from(bytes, 'latin1').toString('utf8');
    const how = round === 1 ? 'percent-decoded' : `percent-decoded ${round} times`;
    out.push([text, how], [text.normalize('NFKC'), `${how} and NFKC-folded`]);
  }
  return out;
}

const STEPS = [
  'with ";" parameters dropped',
  'with trailing dots and spaces dropped',
  'with repeated "/" merged',
] as const;

/** One reading: the steps whose bit is set, then dot segments resolved (RFC 3986 § 5.2.4). */
function read(text: string, steps: number): string {
  let segments = ((steps & 1) !== 0 ? (text.split(/[?#]/, 1)[0] as string) : text).split(SEPARATOR);
  if (segments[0] === '') segments.shift();
  if ((steps & 1) !== 0) segments = segments.map((s) => s.split(';', 1)[0] as string);
  if ((steps & 2) !== 0)
    segments = segments.map((s) => (DOTS.test(s) ? s : s.replace(/[. ]+$/, '')));
  if ((steps & 4) !== 0)
    segments = segments.filter((s, i) => s !== '' || i === segments.length - 1);
  const out: string[] = [];
  segments.forEach((s, i) => {
    if (!DOTS.test(s)) out.push(s);
    else {
      if (s === '..') out.pop();
      if (i === segments.length - 1) out.push('');
    }
  });
  return `/${out.join('/')}`;
}

/** The last path read: every pattern on a host asks about the same request's path in turn. */
let lastPath = '';
let lastReadings: readonly PathReading[] = [{ path: '', how: '' }];

/** Every reading of `path`, the least transformed first; the first one is the path as sent. */
export function urlPathReadings(path: string): readonly PathReading[] {
  if (path !== lastPath) {
    lastReadings = readAll(path);
    lastPath = path;
  }
  return lastReadings;
}

function readAll(path: string): readonly PathReading[] {
  if (PLAIN.test(path)) return [{ path, how: '' }];
  const seen = new Map<string, string>();
  for (const [text, decoded] of decodings(path)) {
    for (const steps of [0, 1, 2, 4, 3, 5, 6, 7]) {
      const exact = read(text, steps);
      const folded = exact.toLowerCase();
      if (seen.has(folded)) continue;
      const how = [decoded, ...STEPS.filter((_, i) => (steps & (1 << i)) !== 0)];
      if (folded !== exact) how.push('ignoring case');
      seen.set(folded, how.filter((h) => h !== '').join(', '));
    }
  }
  return [...seen].map(([p, how]) => ({ path: p, how }));
}

/**
 * A pattern's path prefix in every reading, without a trailing `/`: the prefix covers itself
 * and what is below it (`/admin/` also covers `/admin`, which servers serve as the folder).
 */
export function prefixReadings(prefix: string): readonly string[] {
  return [...new Set(urlPathReadings(prefix).map((r) => r.path.replace(/\/$/, '')))];
}

/** Under a prefix reading means on its segment boundary: `/admin` never covers `/adminx`. */
function under(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((q) => path === q || path.startsWith(`${q}/`));
}

/** The first reading of `path` that one of the prefix's readings covers, or null. */
export function readingUnder(path: string, prefixes: readonly string[]): PathReading | null {
  return urlPathReadings(path).find((r) => under(r.path, prefixes)) ?? null;
}

/** Whether the prefix's readings cover every reading of `path`. */
export function everyReadingUnder(path: string, prefixes: readonly string[]): boolean {
  return urlPathReadings(path).every((r) => under(r.path, prefixes));
}
