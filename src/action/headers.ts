import type { IncomingHttpHeaders } from 'node:http';
import type { AgentHead } from '../http/agent-message.js';

import { HOP_BY_HOP } from '../http/hop-by-hop.js';

export { HOP_BY_HOP };

/** RFC 9110 § 7.6.3: a proxy adds itself to Via in each message it forwards. */
export const VIA = '1.1 trajgate';

/**
 * The field names that Connection values list beyond the hop-by-hop ones (RFC 9110 § 7.6.1),
 * lower-cased; null when there are none, as with the usual `keep-alive` or `close`.
 */
function namedFields(values: readonly string[]): Set<string> | null {
  let named: Set<string> | null = null;
  for (const value of values) {
    for (const token of value.split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== '' && !HOP_BY_HOP.has(name)) (named ??= new Set()).add(name);
    }
  }
  return named;
}

/**
 * Request fields to send upstream, as a flat [name, value, ...] list that keeps duplicates.
 * `host` replaces the client's Host: for an absolute-form request the target's authority
 * wins (RFC 9112 § 3.2.2). `keep` lets an upgrade keep Connection and Upgrade.
 */
export function upstreamRequestHeaders(
  raw: readonly string[],
  host: string,
  keep: ReadonlySet<string> = new Set(),
): string[] {
  const connection: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() === 'connection') connection.push(raw[i + 1] as string);
  }
  const named = namedFields(connection);
  const out: string[] = ['host', host];
  let via: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    // HTTP/2 pseudo-headers (RFC 9113 § 8.3) are the request line's parts, given separately.
    if (lower === 'host' || lower.charCodeAt(0) === 0x3a) continue;
    if (lower === 'via') {
      via = via === null ? (raw[i + 1] as string) : `${via}, ${raw[i + 1]}`;
      continue;
    }
    if (!keep.has(lower) && (HOP_BY_HOP.has(lower) || named?.has(lower))) continue;
    // Expect (RFC 9110 § 10.1.1) is asked of this connection: trajgate meets it itself (100
    // Continue once judged, else 417) and never forwards it; undici would refuse the request.
    if (lower === 'expect') continue;
    out.push(name, raw[i + 1] as string);
  }
  out.push('via', via === null ? VIA : `${via}, ${VIA}`);
  return out;
}

/**
 * Response fields to send back to the agent, from undici's raw [name, value, ...] buffers:
 * hop-by-hop ones removed (with any the upstream's Connection names), Via appended. Field
 * bytes are read as latin1, as Node writes them back: obs-text (RFC 9110 § 5.5) passes through
 * byte for byte.
 */
export function downstreamRawHeaders(raw: readonly (Buffer | string)[]): string[] {
  const out: string[] = [];
  let connection: string[] | null = null;
  let via: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = latin1(raw[i] as Buffer | string);
    const lower = name.toLowerCase();
    const value = latin1(raw[i + 1] as Buffer | string);
    if (lower === 'via') via = via === null ? value : `${via}, ${value}`;
    else if (lower === 'connection') (connection ??= []).push(value);
    else if (!HOP_BY_HOP.has(lower)) out.push(name, value);
  }
  const named = connection === null ? null : namedFields(connection);
  const kept = named === null ? out : withoutFields(out, named);
  kept.push('via', via === null ? VIA : `${via}, ${VIA}`);
  return kept;
}

const latin1 = (field: Buffer | string): string =>
  typeof field === 'string' ? field : field.toString('latin1');

function withoutFields(flat: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    if (!names.has((flat[i] as string).toLowerCase()))
      out.push(flat[i] as string, flat[i + 1] as string);
  }
  return out;
}

/**
 * Whether a request announces content: chunked or a non-zero length (RFC 9112 § 6.3); on
 * HTTP/2, a HEADERS frame without END_STREAM (RFC 9113 § 8.1), Content-Length or not.
 */
export function hasBody(req: Pick<AgentHead, 'headers' | 'httpVersion'>): boolean {
  const stream = (req as { stream?: { endAfterHeaders: boolean } }).stream;
  if (stream !== undefined) return !stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The request content's size as its Content-Length says (RFC 9110 § 8.6), else null. */
export function announcedLength(headers: IncomingHttpHeaders): number | null {
  const length = headers['content-length'];
  return length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : null;
}

/**
 * RFC 9110 § 10.1.1: 100-continue is the only expectation; another is answered 417. Node
 * ignores Expect in HTTP/1.0 requests, as the RFC asks for 100-continue. Returns the problem,
 * or null.
 */
export function expectationProblem(req: Pick<AgentHead, 'headers' | 'httpVersion'>): string | null {
  const expect = req.headers.expect;
  if (expect === undefined || req.httpVersion !== '1.1') return null;
  if (expect.trim().toLowerCase() === '100-continue') return null;
  return `expectation ${JSON.stringify(expect.slice(0, 100))} is not supported (only 100-continue)`;
}

/**
 * A request waiting for `100 Continue` before it sends its content (RFC 9110 § 10.1.1); any
 * other expectation was refused before (expectationProblem).
 */
export function expectsContinue(req: Pick<AgentHead, 'headers' | 'httpVersion'>): boolean {
  return req.headers.expect !== undefined && req.httpVersion === '1.1';
}

/**
 * RFC 9112 § 3.2: an HTTP/1.1 request carries exactly one Host field line, or is answered 400.
 * Returns what is wrong, or null. `required` false lets an HTTP/1.0 request omit it.
 */
export function hostFieldProblem(raw: readonly string[], required: boolean): string | null {
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === 'host') hosts++;
  if (hosts > 1) return 'more than one Host field';
  return hosts === 0 && required ? 'no Host field' : null;
}

/** The request line and header section as written (RFC 9112 § 3, § 5): bytes sent up. */
export function requestHeadLength(
  method: string,
  path: string,
  headers: readonly string[],
): number {
  let n = method.length + path.length + 14; // SP, SP "HTTP/1.1" CRLF, the CRLF that ends it
  for (const field of headers) n += field.length + 2; // name ": " / value CRLF
  return n;
}

/** A flat field list as an object, repeated names joined (RFC 9110 § 5.3). */
export function fieldObject(fields: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) {
    const name = (fields[i] as string).toLowerCase();
    const value = fields[i + 1] as string;
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}

/** Every value of a header, in order (`name` lower-case). */
export const headerValues = (rawHeaders: readonly string[], name: string): string[] =>
  rawHeaders.filter((_, i) => i % 2 === 1 && (rawHeaders[i - 1] as string).toLowerCase() === name);
