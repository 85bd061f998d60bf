import { errnoCode } from '../errors.js';
import { errors } from '../undici.js';
import type { H2Handler } from './h2-exchange.js';
import type { Carried, H1Connection } from './h1-connection.js';
import type { RequestHead } from './h1-request.js';
import { BodyFraming, bodilessRequest, sentAgain } from './h1-request.js';

/** One request for an HTTP/1.1 upstream. */
export interface H1Request {
  /** `host:port` as in a URL (IPv6 in brackets): the pool's key. */
  readonly authority: string;
  /** Where to connect: the address egress checked (plain), or the URL's name (HTTPS). */
  readonly address: string;
  readonly port: number;
  readonly method: string;
  readonly path: string;
  /** Flat [name, value, …] (see requestHead). */
  readonly headers: readonly string[];
  readonly body: AsyncIterable<Buffer> | null;
}

/** What a request's answer is told, in undici's legacy dispatch-handler terms (ResponseRelay). */
export type H1Handler = Pick<
  H2Handler,
  'onConnect' | 'onHeaders' | 'onData' | 'onComplete' | 'onError'
>;

/**
 * One request and its answer on one connection, told to `handler` as undici tells it: connect
 * (with the abort), headers (informational ones too), data with backpressure (false: nothing
 * more until `resume`), then complete with the trailers, or an error, once. A bodiless
 * idempotent request whose reused connection turns out closed before any answer is sent once
 * more on a new one (`retry`).
 */
export class Exchange implements Carried {
  #conn: H1Connection | null = null;
  #connected = false;
  #settled = false;
  /** The request body is still going up. */
  #writing = false;
  #framing: BodyFraming | null = null;
  #body: AsyncIterator<Buffer> | null = null;
  /** The final answer's status; 0 before it. */
  #status = 0;
  #fields: readonly string[] = [];
  /** llhttp's reading of the answer: the connection stays open after it. */
  #keepAlive = false;
  /** …and this client may send another request on it. */
  #reusable = false;
  #bytes = 0;
  #paused = false;
  /** Body chunks parsed while paused (the parser cannot stop inside a read), in order. */
  #queue: Buffer[] = [];
  /** The answer ended while paused: its trailers, delivered after the queue. */
  #ending: string[] | null = null;
  #retried = false;
  readonly #resume = () => this.resume();
  readonly #abort = (err: Error) => this.fail(err, false);

  constructor(
    readonly req: H1Request,
    readonly request: RequestHead,
    private readonly handler: H1Handler,
    private readonly retry: (exchange: Exchange) => void,
    private readonly settled: () => void,
  ) {}

  /** The answer is paused: the connection stops reading. */
  get paused(): boolean {
    return this.#paused;
  }

  /** Sends the request on `conn` (once connected; again after a retry). */
  start(conn: H1Connection): void {
    // Aborted while a retry's connection was being made.
    if (this.#settled) return conn.drop();
    this.#conn = conn;
    conn.serve(this);
    if (!this.#connected) {
      this.#connected = true;
      this.handler.onConnect(this.#abort);
      if (this.#settled) return;
    }
    const body = this.req.body;
    if (body === null) return void conn.socket.write(bodilessRequest(this.request), 'latin1');
    this.#writing = true;
    void this.#send(conn, body);
  }

  async #send(conn: H1Connection, body: AsyncIterable<Buffer>): Promise<void> {
    const socket = conn.socket;
    const framing = (this.#framing = new BodyFraming(socket, this.request));
    const it = (this.#body = body[Symbol.asyncIterator]());
    try {
      for (;;) {
        const next = await it.next();
        if (this.#settled || socket.destroyed) return;
        if (next.done === true) break;
        if (!framing.write(next.value)) await conn.drained();
      }
      framing.end();
      this.#writing = false;
      // The upstream's silence counts from the body's end (undici's headers timeout).
      conn.arm();
    } catch (err) {
      this.fail(err as Error, false);
    }
  }

  /** The parser read an answer's head; returns 1 when no body follows (HEAD). */
  head(status: number, fields: string[], upgrade: boolean, keepAlive: boolean): 0 | 1 {
    if (this.#settled) return 1;
    if (upgrade) {
      // Nothing here asks to switch protocols (upgrades are relayed by upgrade.ts).
      this.fail(new errors.SocketError('bad upgrade'), false);
      return 1;
    }
    if (status < 200) {
      // Informational (RFC 9110 § 15.2): the final answer follows.
      this.handler.onHeaders(status, fields, this.#resume);
      return 0;
    }
    this.#status = status;
    this.#fields = fields;
    this.#keepAlive = keepAlive;
    const conn = this.#conn as H1Connection;
    this.#reusable = keepAlive && !this.request.close && conn.keepAliveHint(fields);
    const go = this.handler.onHeaders(status, fields, this.#resume);
    if (!go && !this.#settled) this.#paused = true;
    return this.req.method === 'HEAD' || this.#settled ? 1 : 0;
  }

  body(chunk: Buffer): void {
    if (this.#settled) return;
    this.#bytes += chunk.length;
    if (this.#paused) this.#queue.push(chunk);
    else if (!this.handler.onData(chunk) && !this.#settled) this.#paused = true;
  }

  /** The parser read a message's end: an informational one's, or the answer's. */
  message(trailers: string[]): void {
    if (this.#settled || this.#status === 0) return;
    if (this.#paused) this.#ending = trailers;
    else this.#complete(trailers);
  }

  resume(): void {
    const conn = this.#conn as H1Connection;
    if (!this.#paused || this.#settled) return;
    // Called from inside a read (a handler that resumes at once): after it.
    if (conn.parsing) return void queueMicrotask(this.#resume);
    while (this.#queue.length > 0) {
      if (!this.handler.onData(this.#queue.shift() as Buffer) || this.#settled) return;
    }
    this.#paused = false;
    if (this.#ending !== null) return this.#complete(this.#ending);
    conn.resumeReading();
  }

  #complete(trailers: string[]): void {
    this.#settled = true;
    const conn = this.#conn as H1Connection;
    this.handler.onComplete(trailers);
    // Answered before the whole request went up: the rest is not sent (undici resets).
    const reuse = this.#reusable && !this.#writing && !this.#unexpectedBody();
    this.#stopBody();
    conn.done(reuse);
    this.settled();
  }

  /** A body went up on a method that takes none: the server may have read it as a request. */
  #unexpectedBody(): boolean {
    return !this.request.payload && this.#framing?.started === true;
  }

  /**
   * The upstream closed its side (`err`: reset it): the end of a body delimited by the close
   * (RFC 9112 § 6.3), or a failure.
   */
  closed(err: Error | null): void {
    if (this.#settled || this.#ending !== null) return;
    if (this.#status === 0 || this.#keepAlive)
      return this.fail(err ?? new errors.SocketError('other side closed'), true);
    const bad = (this.#conn as H1Connection).finish();
    if (bad !== undefined) this.fail(this.parseError(bad), true);
  }

  /** llhttp's error (`code`, `reason`) as undici reports it: a body cut short is a length mismatch. */
  parseError(err: Error & { reason?: string }): Error {
    if (errnoCode(err) === 'HPE_HEADER_OVERFLOW') return new errors.HeadersOverflowError();
    const length = lengthOf(this.#fields);
    if (this.#status !== 0 && length !== null && length !== this.#bytes)
      return new errors.ResponseContentLengthMismatchError();
    if (err.reason === undefined) return err;
    return new errors.HTTPParserError(
      `Response does not match the HTTP/1.1 protocol (${err.reason})`,
    );
  }

  /** The upstream was silent for the upstream timeout; not while paused or sending the body. */
  timedOut(): void {
    const socket = (this.#conn as H1Connection).socket;
    if (this.#paused) return;
    if (this.#status === 0 && this.#writing && !socket.writableNeedDrain) return;
    const answered = this.#status !== 0;
    this.fail(answered ? new errors.BodyTimeoutError() : new errors.HeadersTimeoutError(), true);
  }

  /**
   * Ends the exchange with `err`, its connection destroyed; `stale`: the connection failed,
   * which a bodiless idempotent request on a reused one survives once, on a new one.
   */
  fail(err: Error, stale: boolean): void {
    if (this.#settled) return;
    const conn = this.#conn;
    if (stale && this.#retryable(conn, err)) {
      this.#retried = true;
      this.#conn = null;
      conn?.drop();
      return void this.retry(this);
    }
    this.#settled = true;
    conn?.drop();
    this.#stopBody();
    this.handler.onError(err);
    this.settled();
  }

  #retryable(conn: H1Connection | null, err: Error): boolean {
    const { method, body } = this.req;
    const early = conn !== null && conn.reused && conn.bytesIn === 0;
    return !this.#retried && early && sentAgain(method, body !== null, err);
  }

  #stopBody(): void {
    this.#writing = false;
    this.#body?.return?.().catch(() => {});
  }
}

/** A Content-Length among `fields`, else null. */
function lengthOf(fields: readonly string[]): number | null {
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    if (name.length === 14 && name.toLowerCase() === 'content-length')
      return parseInt(fields[i + 1] as string, 10);
  }
  return null;
}
