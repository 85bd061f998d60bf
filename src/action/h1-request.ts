import type { Socket } from 'node:net';
import { errnoCode } from '../errors.js';
import { errors } from '../undici.js';

/**
 * Methods defined to carry content (undici 7's list, RFC 9110 § 9.3): an empty body is sent as
 * `content-length: 0` (RFC 9110 § 8.6), and a body on any other method ends the connection's
 * reuse (a server may not expect one).
 */
const PAYLOAD = new Set(['PUT', 'POST', 'PATCH', 'QUERY', 'PROPFIND', 'PROPPATCH']);

/** Methods a client may send again (RFC 9110 § 9.2.2: idempotent). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** How a kept-alive connection the upstream had closed fails a request written on it. */
const STALE = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** What undici refuses in a field value (CR, LF, NUL and other controls: no header injection). */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** What undici refuses in a request target (controls, spaces, past Latin-1). */
const BAD_PATH = /[^\u0021-\u00ff]/;

/**
 * A request's head as undici 7 writes it, byte for byte, so that both engines send upstreams
 * the same bytes: the request line, `host` first, `connection`, the other fields in their order,
 * then the framing field (written with the body's first bytes, as undici does).
 */
export interface RequestHead {
  /** Up to the framing field, without the blank line. */
  readonly text: string;
  /** The Content-Length given; null when none, or 0 on a method that takes no content. */
  readonly length: number | null;
  readonly payload: boolean;
  /** `connection: close` was sent: after a HEAD, as undici does (servers that send a body). */
  readonly close: boolean;
}

/**
 * The head for `method path` with the flat `fields`, whose `host` (else `authority`) goes first
 * and whose `content-length` frames the body. Throws undici's InvalidArgumentError for a target
 * or value it would refuse.
 */
export function requestHead(
  method: string,
  path: string,
  fields: readonly string[],
  authority: string,
): RequestHead {
  if (BAD_PATH.test(path)) throw new errors.InvalidArgumentError('invalid request path');
  let host: string | null = null;
  let length: number | null = null;
  let rest = '';
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    const value = fields[i + 1] as string;
    if (BAD_VALUE.test(value)) throw new errors.InvalidArgumentError(`invalid ${name} header`);
    const size = name.length;
    const lower = size === 4 || size === 14 ? name.toLowerCase() : '';
    if (lower === 'host') host = value;
    else if (lower === 'content-length') length = parseInt(value, 10);
    else rest += `${name}: ${value}\r\n`;
  }
  const payload = PAYLOAD.has(method);
  const close = method === 'HEAD';
  // undici's host without a field: the origin's, its default port left out.
  host ??= authority.endsWith(':80') ? authority.slice(0, -3) : authority;
  return {
    text: `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: ${close ? 'close' : 'keep-alive'}\r\n${rest}`,
    length: length === 0 && !payload ? null : length,
    payload,
    close,
  };
}

/** The whole request when it has no body. */
export function bodilessRequest(head: RequestHead): string {
  return `${head.text}${head.length === 0 ? 'content-length: 0\r\n' : ''}\r\n`;
}

/**
 * A request body written after its head as undici frames it: with the announced Content-Length,
 * else chunked (RFC 9112 § 7.1); the head goes with the first bytes. A body longer or shorter
 * than announced throws undici's RequestContentLengthMismatchError.
 */
export class BodyFraming {
  #sent = 0;

  constructor(
    private readonly socket: Socket,
    private readonly head: RequestHead,
  ) {}

  /** Whether bytes went up (a body on a method that takes none ends the connection's reuse). */
  get started(): boolean {
    return this.#sent > 0;
  }

  /** Writes `chunk`; false: wait for the socket's 'drain'. */
  write(chunk: Buffer): boolean {
    const size = chunk.length;
    if (size === 0) return true;
    const { text, length } = this.head;
    if (length !== null && this.#sent + size > length)
      throw new errors.RequestContentLengthMismatchError();
    let prefix = '';
    if (this.#sent === 0) {
      prefix =
        length === null
          ? `${text}transfer-encoding: chunked\r\n`
          : `${text}content-length: ${length}\r\n\r\n`;
    }
    if (length === null) prefix += `\r\n${size.toString(16)}\r\n`;
    this.#sent += size;
    if (prefix === '') return this.socket.write(chunk);
    this.socket.cork();
    this.socket.write(prefix, 'latin1');
    const ok = this.socket.write(chunk);
    this.socket.uncork();
    return ok;
  }

  end(): void {
    const { text, length, payload } = this.head;
    if (this.#sent === 0) {
      this.socket.write(`${text}${payload ? 'content-length: 0\r\n' : ''}\r\n`, 'latin1');
    } else if (length === null) this.socket.write('\r\n0\r\n\r\n', 'latin1');
    if (length !== null && this.#sent !== length)
      throw new errors.RequestContentLengthMismatchError();
  }
}

/**
 * Whether a request written on a reused connection that failed with `err` before any answer
 * may go again on a new one: idempotent and bodiless (a body streamed up is gone), so the
 * upstream may see it twice without harm. undici sends none again.
 */
export function sentAgain(method: string, body: boolean, err: Error): boolean {
  return !body && IDEMPOTENT.has(method) && STALE.has(errnoCode(err) ?? '');
}
