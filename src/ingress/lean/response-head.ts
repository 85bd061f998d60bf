import { createRequire } from 'node:module';
import { STATUS_CODES } from 'node:http';
import type { OutgoingHttpHeaders } from 'node:http';
import { TrajgateError } from '../../errors.js';

/** node:http's own field checks (the ones ServerResponse runs on every header it writes). */
const common = createRequire(import.meta.url)('_http_common') as {
  _checkIsHttpToken(name: string): boolean;
  _checkInvalidHeaderChar(value: string): boolean;
};

/** What the request asked of the answer's framing. */
export interface ResponseFor {
  readonly method: string;
  readonly versionMajor: number;
  readonly versionMinor: number;
  /** llhttp's reading: HTTP/1.1 without `Connection: close`, or 1.0 with keep-alive. */
  readonly shouldKeepAlive: boolean;
  /** The request's `TE` field: an HTTP/1.0 client may still ask for chunked. */
  readonly te: string | undefined;
  /** The listener's keep-alive idle time, announced as `Keep-Alive: timeout=` (seconds). */
  readonly keepAliveMs: number;
}

/** A head ready to write, and how the body after it is framed. */
export interface ResponseHead {
  readonly text: string;
  /** Body bytes go in chunks (RFC 9112 § 7.1). */
  readonly chunked: boolean;
  /** The connection closes after this answer (said, or its body is delimited by the close). */
  readonly last: boolean;
  /** False for HEAD, 1xx, 204 and 304 (RFC 9110 § 6.4.1): nothing after the head. */
  readonly hasBody: boolean;
}

/** A date's IMF-fixdate (RFC 9110 § 5.6.7), recomputed once a second as node:http does. */
let dateText = '';
let dateSecond = -1;
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/** Names and values, in order, from a flat raw list or an object (arrays repeat the name). */
function fieldList(headers: OutgoingHttpHeaders | readonly (string | number)[]): string[] {
  const out: string[] = [];
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      out.push(String(headers[i]), String(headers[i + 1]));
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) out.push(name, String(v));
    else out.push(name, String(value));
  }
  return out;
}

const CHUNKED = /(?:^|\W)chunked(?:$|\W)/i;
const CLOSE = /(?:^|\W)close(?:$|\W)/i;

/**
 * The response head node:http's ServerResponse writes for `writeHead(status, headers)` and the
 * framing it then uses (lib/_http_outgoing.js `_storeHeader`), byte for byte but the Date: the
 * fields as given, then `Date` unless given, then `Connection: keep-alive` with `Keep-Alive:
 * timeout=N` or `Connection: close` unless given, then `Transfer-Encoding: chunked` when the
 * body has no length and the client reads chunks, else the close delimits it (RFC 9112 § 6.3).
 * A name that is no token or a value with CR, LF or NUL is refused, never written (response
 * splitting), as node:http refuses it.
 */
export function responseHead(
  status: number,
  headers: OutgoingHttpHeaders | readonly (string | number)[],
  req: ResponseFor,
): ResponseHead {
  const fields = fieldList(headers);
  const http10 = req.versionMajor < 1 || (req.versionMajor === 1 && req.versionMinor < 1);
  const useChunked = http10 ? req.te !== undefined && CHUNKED.test(req.te) : true;
  const hasBody =
    req.method !== 'HEAD' && status !== 204 && status !== 304 && !(status >= 100 && status < 200);
  let text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  let connection = false;
  let length = false;
  let te = false;
  let date = false;
  let chunked = false;
  let last = false;
  let keepAlive = req.shouldKeepAlive;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    const value = fields[i + 1] as string;
    if (!common._checkIsHttpToken(name))
      throw new TrajgateError(
        'E_INTERNAL',
        `response header name ${JSON.stringify(name)} is not a token`,
      );
    if (common._checkInvalidHeaderChar(value))
      throw new TrajgateError('E_INTERNAL', `response header ${name} has an invalid character`);
    text += `${name}: ${value}\r\n`;
    const lower = name.toLowerCase();
    if (lower === 'connection') {
      connection = true;
      if (CLOSE.test(value)) last = true;
      else keepAlive = true;
    } else if (lower === 'content-length') length = true;
    else if (lower === 'transfer-encoding') {
      te = true;
      if (CHUNKED.test(value)) chunked = true;
    } else if (lower === 'date') date = true;
  }
  if (!date) text += `Date: ${httpDate()}\r\n`;
  if (!connection) {
    if (keepAlive && (length || useChunked)) {
      text += 'Connection: keep-alive\r\n';
      if (req.keepAliveMs > 0)
        text += `Keep-Alive: timeout=${Math.floor(req.keepAliveMs / 1000)}\r\n`;
    } else {
      last = true;
      text += 'Connection: close\r\n';
    }
  }
  if (!length && !te && hasBody) {
    if (useChunked) {
      text += 'Transfer-Encoding: chunked\r\n';
      chunked = true;
    } else last = true;
  }
  return { text: `${text}\r\n`, chunked: chunked && hasBody, last, hasBody };
}
