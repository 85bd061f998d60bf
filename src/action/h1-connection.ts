import type { Socket } from 'node:net';
import { errnoCode } from '../errors.js';
import { errors } from '../undici.js';
import type { NativeParser } from '../http/llhttp.js';
import { HTTPParser } from '../http/llhttp.js';

/** What a connection tells the exchange it carries (h1-exchange.ts). */
export interface Carried {
  /** Its answer is paused: the connection stops reading. */
  readonly paused: boolean;
  /** An answer's head; returns 1 when no body follows. */
  head(status: number, fields: string[], upgrade: boolean, keepAlive: boolean): 0 | 1;
  body(chunk: Buffer): void;
  /** A message's end (an informational answer's, or the answer's), with its trailers. */
  message(trailers: string[]): void;
  /** The upstream closed its side, or reset it (`err`). */
  closed(err: Error | null): void;
  /** `stale`: the connection failed (a retry may help). */
  fail(err: Error, stale: boolean): void;
  /** The upstream was silent for its timeout. */
  timedOut(): void;
  /** llhttp's error as undici reports it. */
  parseError(err: Error): Error;
}

/** Where a connection goes between requests. */
export interface ConnectionOwner {
  /** It may take another request (a turn of the event loop after its last answer). */
  idle(conn: H1Connection): void;
  /** It closed. */
  gone(conn: H1Connection): void;
}

/** undici's: a `Keep-Alive: timeout=` hint is trusted up to 2 s before it runs out, 10 min at most. */
const HINT_MARGIN_MS = 2_000;
const HINT_MAX_MS = 600_000;

/** How long a connection may be silent: during an exchange, and idle between two. */
export interface ConnectionTimeouts {
  readonly upstream: number;
  readonly idle: number;
}

/**
 * One keep-alive connection to an HTTP/1.1 upstream (plain or TLS) and its response parser,
 * reused across its requests, one at a time (no pipelining). Its exchange is told what the
 * parser reads and how the socket ends; between exchanges any byte or close from the upstream
 * ends it.
 */
export class H1Connection {
  readonly #parser: NativeParser = new HTTPParser();
  exchange: Carried | null = null;
  /** It answered a request before the current one. */
  reused = false;
  /** Bytes read during the current exchange. */
  bytesIn = 0;
  /** The parser is running (a read, or the end of input). */
  parsing = false;
  #idleMs: number;
  /** Fields flushed before their head or message ended (more than 32, or trailers). */
  #fields: string[] = [];
  #error: Error | null = null;

  constructor(
    readonly socket: Socket,
    readonly key: string,
    private readonly owner: ConnectionOwner,
    private readonly timeouts: ConnectionTimeouts,
  ) {
    this.#idleMs = timeouts.idle;
    const parser = this.#parser;
    parser.initialize(HTTPParser.RESPONSE, {}, 0, HTTPParser.kLenientNone);
    parser[HTTPParser.kOnMessageBegin] = () => {
      // An answer nobody asked for: the connection cannot be trusted with another request.
      if (this.exchange === null) this.socket.destroy();
    };
    parser[HTTPParser.kOnHeaders] = (fields: string[]) => {
      for (const field of fields) this.#fields.push(field);
    };
    parser[HTTPParser.kOnHeadersComplete] = (...args: unknown[]) => this.#head(args);
    parser[HTTPParser.kOnBody] = (chunk: Buffer) => this.exchange?.body(chunk);
    parser[HTTPParser.kOnMessageComplete] = () => {
      const trailers = this.#fields;
      this.#fields = [];
      this.exchange?.message(trailers);
    };
    socket.on('timeout', () => {
      if (this.exchange === null) socket.destroy();
      else this.exchange.timedOut();
    });
    socket.on('error', (err: Error) => {
      this.#error = err;
      // A reset may end a body delimited by the close, as the close does (undici alike).
      if (errnoCode(err) === 'ECONNRESET') this.exchange?.closed(err);
      else this.exchange?.fail(err, true);
    });
    socket.on('end', () => {
      if (this.exchange === null) socket.destroy();
      else this.exchange.closed(null);
    });
    socket.on('close', () => {
      this.exchange?.closed(this.#error ?? new errors.SocketError('closed'));
      this.exchange = null;
      parser.free();
      owner.gone(this);
    });
  }

  /** `versionMajor, versionMinor, fields, method, url, status, statusText, upgrade, keepAlive`. */
  #head(args: unknown[]): 0 | 1 {
    const fields = (args[2] as string[] | undefined) ?? this.#fields;
    this.#fields = [];
    const status = args[5] as number;
    return this.exchange?.head(status, fields, args[7] as boolean, args[8] as boolean) ?? 1;
  }

  /** A read from the socket (a view valid during the call); false stops reading. */
  read(view: Buffer): boolean {
    const exchange = this.exchange;
    if (exchange === null) {
      this.socket.destroy();
      return false;
    }
    this.bytesIn += view.length;
    let result: number | Error;
    this.parsing = true;
    try {
      result = this.#parser.execute(view);
    } catch (err) {
      // A handler that threw: its request fails, as under undici.
      this.#failed(err as Error);
      return false;
    } finally {
      this.parsing = false;
    }
    if (typeof result === 'number') return !this.socket.destroyed && exchange.paused !== true;
    this.#failed(this.exchange?.parseError(result) ?? result);
    return false;
  }

  #failed(err: Error): void {
    if (this.exchange === null) this.socket.destroy();
    else this.exchange.fail(err, false);
  }

  /** The end of input for a body delimited by the close (completes it), else the error. */
  finish(): Error | undefined {
    this.parsing = true;
    try {
      return this.#parser.finish();
    } finally {
      this.parsing = false;
    }
  }

  /** Takes `exchange`, which the upstream now has `timeouts.upstream` to answer. */
  serve(exchange: Carried): void {
    this.exchange = exchange;
    this.bytesIn = 0;
    this.socket.ref();
    this.arm();
  }

  /** Restarts the upstream's deadline (after the request body, or a pause). */
  arm(): void {
    this.socket.setTimeout(this.timeouts.upstream);
  }

  resumeReading(): void {
    this.arm();
    this.socket.resume();
  }

  /**
   * Takes an answer's `Keep-Alive: timeout=` hint (RFC 9112 Appendix C.2.2's Keep-Alive field)
   * for the next idle period, else the default; false: too short to send another request.
   */
  keepAliveHint(fields: readonly string[]): boolean {
    let hint = '';
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i] as string;
      if (name.length === 10 && name.toLowerCase() === 'keep-alive') hint += fields[i + 1];
    }
    const seconds = /timeout=(\d+)/.exec(hint)?.[1];
    if (seconds === undefined) {
      this.#idleMs = this.timeouts.idle;
      return true;
    }
    this.#idleMs = Math.min(Number(seconds) * 1000 - HINT_MARGIN_MS, HINT_MAX_MS);
    return this.#idleMs > 0;
  }

  /** Resolves once the socket drained or closed. */
  drained(): Promise<void> {
    const socket = this.socket;
    return new Promise((resolve) => {
      const done = () => {
        socket.off('drain', done).off('close', done);
        resolve();
      };
      socket.on('drain', done).on('close', done);
    });
  }

  /**
   * The exchange is over: the connection waits for another (`reuse`), or closes. It is offered
   * again only after a turn of the event loop, so that a close or stray bytes the upstream sent
   * with its answer are read first (as undici does, GHSA-35p6-xmwp-9g52).
   */
  done(reuse: boolean): void {
    this.exchange = null;
    if (!reuse) return void this.socket.destroy();
    this.reused = true;
    // Its answer may have ended while paused (its rest parsed ahead): read on.
    this.socket.resume();
    this.socket.setTimeout(this.#idleMs);
    // An idle connection keeps no process alive.
    this.socket.unref();
    setImmediate(() => this.owner.idle(this));
  }

  /** Closes it, whatever it was doing; its exchange is no longer told. */
  drop(): void {
    this.exchange = null;
    this.socket.destroy();
  }
}
