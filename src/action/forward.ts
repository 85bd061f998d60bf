import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Agent } from '../undici.js';
import type { Dispatcher } from 'undici';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { plainConnector, tlsConnector } from './upstream-connect.js';
import type { Capture } from './capture.js';
import type { Egress } from './egress.js';
import {
  downstreamRawHeaders,
  expectsContinue,
  hasBody,
  upstreamRequestHeaders,
} from './headers.js';
import { plainRefusal, sendRefusal } from './respond.js';
import type { Transfer } from './transfer.js';
import { upstreamFailure } from './transfer.js';

export interface ForwardLimits {
  readonly connectTimeout: number;
  readonly upstreamTimeout: number;
  /** The longest gap allowed while the agent sends a request body (then 408). */
  readonly bodyTimeout: number;
}

/** The agent stopped sending the body it announced: answered 408, the upstream request aborted. */
const bodyStalled = (ms: number) =>
  new TrajgateError('E_BODY_TIMEOUT', `request body stalled: no bytes from the agent for ${ms} ms`);

/** `host:port` as it appears in a URL: IPv6 in brackets. */
export function authority(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/**
 * Forwards HTTP requests through pooled keep-alive undici Agents. Plain HTTP goes to the
 * address egress checked (origin `http://IP:port`, Host carries the name): never a fresh
 * lookup. HTTPS (intercepted TLS) keeps the name in the origin for SNI and certificate checks,
 * and its connector resolves and checks every new connection the same way, verifying the
 * server's certificate against `trust` (see upstreamTrust: the machine's CAs plus
 * `tls.upstreamCa`). Responses are written as
 * undici parses them (dispatch handler: no stream or promise per request), with backpressure.
 */
export class Forwarder {
  readonly #plain: Agent;
  readonly #tls: Agent;
  readonly #bodyTimeout: number;

  constructor(limits: ForwardLimits, egress: Egress, trust: () => readonly string[]) {
    const timeouts = {
      headersTimeout: limits.upstreamTimeout,
      bodyTimeout: limits.upstreamTimeout,
      keepAliveTimeout: 4_000,
    };
    this.#bodyTimeout = limits.bodyTimeout;
    this.#plain = new Agent({ ...timeouts, connect: plainConnector(limits.connectTimeout) });
    this.#tls = new Agent({
      ...timeouts,
      connect: tlsConnector(limits.connectTimeout, egress, trust),
    });
  }

  forward(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    address: string,
    capture?: Capture,
  ): Promise<Transfer> {
    const tls = url.protocol === 'https:';
    const port = url.port === '' ? (tls ? 443 : 80) : Number(url.port);
    const upstream = tls ? url.host : authority(address, port);
    const body = hasBody(req.headers);
    return new Promise((resolve) => {
      const relay = new ResponseRelay(res, upstream, capture, resolve);
      (tls ? this.#tls : this.#plain).dispatch(
        {
          origin: `${url.protocol}//${upstream}`,
          path: url.pathname + url.search,
          method: req.method as Dispatcher.HttpMethod,
          headers: upstreamRequestHeaders(req.rawHeaders, url.host),
          body: body
            ? Readable.from(relay.requestBody(req, this.#bodyTimeout), { objectMode: false })
            : null,
        },
        relay,
      );
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.#plain.close(), this.#tls.close()]);
  }
}

/**
 * One request's dispatch handler: writes the response to the agent as undici parses it, with
 * backpressure, and counts the bytes each way. One object per request, methods shared.
 */
class ResponseRelay implements Dispatcher.DispatchHandler {
  #bytesUp = 0;
  #bytesDown = 0;
  #status: number | null = null;
  #resume: (() => void) | null = null;
  #abort: ((err: Error) => void) | null = null;
  #idle: NodeJS.Timeout | undefined;
  /** The body is waiting for the agent's next bytes (not for undici to pull). */
  #waiting = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly upstream: string,
    private readonly capture: Capture | undefined,
    private readonly resolve: (transfer: Transfer) => void,
  ) {}

  /**
   * The request body, counted as undici pulls it (a 'data' listener would start it early).
   * undici pulls once the request is judged and its upstream connected: only then is an agent
   * that expects it sent `100 Continue`, so a refused or unreachable request's body is never
   * invited. A gap longer than `idleMs` while waiting for the agent (not while undici holds
   * back) aborts the request.
   */
  async *requestBody(req: IncomingMessage, idleMs: number): AsyncGenerator<Buffer> {
    if (expectsContinue(req)) this.res.writeContinue();
    this.#waiting = true;
    const idle = (this.#idle = setTimeout(() => {
      if (this.#waiting) this.#abort?.(bodyStalled(idleMs));
      else idle.refresh();
    }, idleMs));
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        this.#waiting = false;
        this.#bytesUp += chunk.length;
        this.capture?.request(chunk);
        yield chunk;
        this.#waiting = true;
        idle.refresh();
      }
    } finally {
      clearTimeout(idle);
    }
  }

  onConnect(abort: (err: Error) => void): void {
    this.#abort = abort;
    const res = this.res;
    res.once('close', () => {
      if (!res.writableFinished) abort(new Error('client closed'));
    });
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational: the final response follows
    this.#status = statusCode;
    this.#resume = resume;
    const headers = downstreamRawHeaders(raw);
    this.capture?.responseStart(statusCode, headers);
    this.res.writeHead(statusCode, headers);
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.#bytesDown += chunk.length;
    this.capture?.response(chunk);
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.#resume as () => void);
    return false;
  }

  onComplete(): void {
    this.res.end();
    this.#done();
  }

  onError(err: Error): void {
    const res = this.res;
    if (res.destroyed && !res.writableFinished) return this.#done('client closed');
    const failure =
      isTrajgateError(err) && err.code === 'E_BODY_TIMEOUT'
        ? { status: 408, reason: err.message }
        : upstreamFailure(err, this.upstream);
    if (res.headersSent) {
      res.destroy();
    } else {
      sendRefusal(res, plainRefusal(failure.status, failure.reason));
      this.#status = failure.status;
    }
    this.#done(failure.reason);
  }

  #done(error?: string): void {
    clearTimeout(this.#idle);
    this.resolve({
      status: this.#status,
      bytesUp: this.#bytesUp,
      bytesDown: this.#bytesDown,
      ...(error === undefined ? {} : { error }),
    });
  }
}
