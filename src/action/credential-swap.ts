import { decodeBody, parseCodings } from './content-codings.js';
import { headerValues } from './headers.js';
import { percentEncode } from './credential-spellings.js';
import type { Context, Found, Kit, SwapCredential } from './credential-text.js';
import { kitFor, spellings, swapLatin1, swapText } from './credential-text.js';

export type { SwapCredential };

/** A request as it is to be forwarded, after judging. */
export interface SwapInput {
  /** Path and query as sent upstream. */
  readonly path: string;
  /** Flat [name, value, …] as forwarded (upstreamRequestHeaders' output). */
  readonly rawHeaders: readonly string[];
  readonly body: Buffer | null;
  /** The body's Content-Encoding; the field in rawHeaders when absent. */
  readonly contentEncoding?: string;
}

/**
 * The request with each sentinel replaced by its value, and the credentials it now carries;
 * or why it must not be sent (naming credentials and places, never a value). The body's length
 * may have changed: Content-Length is the caller's to set from it (RFC 9110 § 8.6).
 */
export type SwapResult =
  | {
      readonly ok: true;
      readonly path: string;
      readonly rawHeaders: string[];
      readonly body: Buffer | null;
      readonly used: string[];
    }
  | { readonly ok: false; readonly reason: string };

type Refused = { readonly ok: false; readonly reason: string };
const refused = (reason: string): Refused => ({ ok: false, reason });

/** RFC 9110 § 5.5: CR, LF and NUL are never part of a field value. */
const UNSAFE_IN_HEADER = /[\r\n\0]/;

/**
 * Swaps every sentinel of `credentials` in the URL, the header values and the body (decoded
 * from its Content-Encoding within `maxBody` bytes, then encoded again), then places each
 * credential its request does not carry: `Header: scheme value` where that header is absent,
 * `query=value` where that parameter is absent. Fails closed: a sentinel still there after the
 * swap (a spelling it cannot rewrite) refuses the whole request.
 */
export function swapCredentials(
  input: SwapInput,
  credentials: readonly SwapCredential[],
  maxBody: number,
): SwapResult {
  const { path: path0, rawHeaders, body: body0 } = input;
  if (credentials.length === 0)
    return { ok: true, ...input, rawHeaders: [...rawHeaders], used: [] };
  const kit = kitFor(credentials);
  const used = new Set<string>();
  const url = swapLatin1(path0, kit, 'percent', used);
  if (url !== null && url.left.length > 0) return refused(leftover(url.left, 'the URL'));
  let path = url?.text ?? path0;
  const headers = [...rawHeaders];
  // One scan of the whole header section first: most requests carry no sentinel in it at all.
  const anyInFields = kit.scanner.scan(headers.join('\n')).length > 0;
  for (let i = 0; anyInFields && i < headers.length; i += 2) {
    const name = headers[i]!;
    const inName = kit.scanner.scan(name);
    if (inName.length > 0) return refused(leftover(inName, `a header's name`));
    const here = new Set<string>();
    const swapped = swapLatin1(headers[i + 1]!, kit, 'raw', here);
    if (swapped === null) continue;
    if (swapped.left.length > 0) return refused(leftover(swapped.left, `the ${name} header`));
    // Only a spelling that keeps the value's bytes as they are (raw, JSON) can carry CR or LF.
    if (UNSAFE_IN_HEADER.test(swapped.text)) {
      const unsafe = credentials.find((c) => here.has(c.name) && UNSAFE_IN_HEADER.test(c.value));
      return refused(unsafeInHeader(unsafe ?? credentials.find((c) => here.has(c.name))!, name));
    }
    here.forEach((n) => used.add(n));
    headers[i + 1] = swapped.text;
  }
  let body = body0;
  if (body0 !== null && body0.length > 0) {
    const swapped = swapBody(body0, headers, input.contentEncoding, kit, maxBody, used);
    if (!swapped.ok) return swapped;
    body = swapped.body;
  }
  for (const c of credentials) {
    if (c.query !== undefined) {
      if (hasParameter(path, c.query)) continue;
      path = withParameter(path, `${c.query}=${percentEncode(c.value)}`);
    } else {
      const header = c.header ?? 'Authorization';
      if (field(headers, header) !== undefined) continue;
      if (UNSAFE_IN_HEADER.test(c.value)) return refused(unsafeInHeader(c, header));
      const value = Buffer.from(c.value).toString('latin1');
      headers.push(header, c.scheme === undefined ? value : `${c.scheme} ${value}`);
    }
    used.add(c.name);
  }
  return { ok: true, path, rawHeaders: headers, body, used: [...used] };
}

function swapBody(
  body: Buffer,
  headers: readonly string[],
  contentEncoding: string | undefined,
  kit: Kit,
  maxBody: number,
  used: Set<string>,
): { readonly ok: true; readonly body: Buffer } | Refused {
  if (body.length > maxBody)
    return refused(
      `the request body is larger than ${maxBody} bytes: too large to scan for credential sentinels`,
    );
  const coding = contentEncoding ?? field(headers, 'content-encoding');
  const parsed = parseCodings(coding);
  if ('unsupported' in parsed)
    return refused(
      `the request body's Content-Encoding ${JSON.stringify(parsed.unsupported)} cannot be decoded to look for credential sentinels`,
    );
  const decoded =
    parsed.codings.length === 0
      ? { ok: true as const, body, encode: (b: Buffer) => b }
      : decodeBody(body, parsed.codings, maxBody);
  if (!decoded.ok)
    return refused(`the request body (Content-Encoding ${coding}) ${decoded.reason}`);
  const found = kit.scanner.scan(decoded.body);
  if (found.length === 0) return { ok: true, body };
  const context = bodyContext(field(headers, 'content-type'));
  const out = swapText(decoded.body, kit, context, spellings(found), used) ?? decoded.body;
  const left = kit.scanner.scan(out);
  if (left.length > 0) return refused(leftover(left, 'the request body'));
  return { ok: true, body: decoded.encode(out) };
}

/** What a sentinel written as is reads as in a body of this media type (RFC 8259, WHATWG URL § 5). */
function bodyContext(contentType: string | undefined): Context {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return 'percent';
  return /^application\/(?:[\w.-]+\+)?json$/.test(type) ? 'json' : 'raw';
}

function leftover(found: readonly Found[], where: string): string {
  const what = found.map((f) => `${f.name} (spelled ${f.spelling})`).join(', ');
  return `credential sentinel ${what} in ${where} is in a spelling trajgate cannot swap for its value; the request was not forwarded`;
}

const unsafeInHeader = (c: SwapCredential, header: string) =>
  `credential ${c.name}: its value holds CR, LF or NUL, which a header must not (RFC 9110 § 5.5); not put in the ${header} header`;

/** The first value of a field, by case-insensitive name. */
const field = (headers: readonly string[], name: string): string | undefined =>
  headerValues(headers, name.toLowerCase())[0];

/** Whether the query has the parameter, its name percent-decoded (RFC 3986 § 3.4). */
function hasParameter(path: string, name: string): boolean {
  const q = path.indexOf('?');
  if (q < 0) return false;
  return path
    .slice(q + 1)
    .split('&')
    .some((pair) => {
      const key = pair.split('=')[0]!;
      try {
        return decodeURIComponent(key) === name;
      } catch {
        return key === name;
      }
    });
}

function withParameter(path: string, pair: string): string {
  if (!path.includes('?')) return `${path}?${pair}`;
  return /[?&]$/.test(path) ? path + pair : `${path}&${pair}`;
}
