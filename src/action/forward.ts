import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Agent } from '../undici.js';
import type { Dispatcher } from 'undici';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { plainConnector, tlsConnector } from './upstream-connect.js';
import type { Capture } from './capture.js';
import type { Egress } from './egress.js';
import type { Flow, FlowControl } from './flows.js';
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

/** Why undici was told to abort: the flow was held before it was sent (judged again) or closed. */
const flowStopped = (reason: string) => new TrajgateError('E_FLOW_CLOSED', reason);

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
    capture: Capture | undefined,
    flow: Flow,
  ): Promise<Forwarded> {
    const tls = url.protocol === 'https:';
    const port = url.port === '' ? (tls ? 443 : 80) : Number(url.port);
    const upstream = tls ? url.host : authority(address, port);
    const body = hasBody(req.headers);
    const path = url.pathname + url.search;
    const headers = upstreamRequestHeaders(req.rawHeaders, url.host);
    // The request line and header section count as sent up (volume rules), as the body does.
    flow.up(headBytes(req.method as string, path, headers));
    return new Promise((resolve) => {
      const relay = new ResponseRelay(res, upstream, capture, resolve, flow);
      (tls ? this.#tls : this.#plain).dispatch(
        {
          origin: `${url.protocol}//${upstream}`,
          path,
          method: req.method as Dispatcher.HttpMethod,
          headers,
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

/** How a forwarded request ended; `stopped`: its flow was held or closed before it was sent. */
export type Forwarded = Transfer & { readonly stopped?: 'held' | 'closed' };

/** The request line and header section as written (RFC 9112 § 3, § 5): bytes sent up. */
function headBytes(method: string, path: string, headers: readonly string[]): number {
  let n = method.length + path.length + 13; // SP, SP HTTP/1.1 CRLF, the CRLF that ends it
  for (const field of headers) n += field.length + 2; // name ": " / value CRLF
  return n;
}

/**
 * One request's dispatch handler and its flow's control: writes the response to the agent as
 * undici parses it, with backpressure, and counts the bytes each way. Frozen (its session
 * paused), nothing more of the body goes up and nothing more of the answer comes down until
 * thawed; closed, the upstream request is aborted. At the moment undici would write the request
 * (onConnect) a flow that is not live is not sent at all: held, it is judged again; closed,
 * refused. One object per request, methods shared.
 */
class ResponseRelay implements Dispatcher.DispatchHandler, FlowControl {
  #status: number | null = null;
  #resume: (() => void) | null = null;
  #abort: ((err: Error) => void) | null = null;
  #idle: NodeJS.Timeout | undefined;
  /** The body is waiting for the agent's next bytes (not for undici to pull). */
  #waiting = false;
  #bytesDown = 0;
  #frozen = false;
  /** What the upstream said while frozen, written on thaw in order. */
  #later: (() => void)[] = [];
  #thawed: (() => void) | null = null;
  #completed = false;
  /** Set before undici is told to abort for the flow's sake. */
  #stopped: 'held' | 'closed' | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly upstream: string,
    private readonly capture: Capture | undefined,
    private readonly resolve: (transfer: Forwarded) => void,
    private readonly flow: Flow,
  ) {}

  /**
   * The request body, counted as undici pulls it (a 'data' listener would start it early).
   * undici pulls once the request is judged and its upstream connected: only then is an agent
   * that expects it sent `100 Continue`, so a refused or unreachable request's body is never
   * invited. A gap longer than `idleMs` while waiting for the agent (not while undici holds
   * back, nor while frozen) aborts the request.
   */
  async *requestBody(req: IncomingMessage, idleMs: number): AsyncGenerator<Buffer> {
    if (expectsContinue(req)) this.res.writeContinue();
    this.#waiting = true;
    const idle = (this.#idle = setTimeout(() => {
      if (this.#waiting && !this.#frozen) this.#abort?.(bodyStalled(idleMs));
      else idle.refresh();
    }, idleMs));
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        this.#waiting = false;
        if (this.#frozen) await new Promise<void>((thawed) => (this.#thawed = thawed));
        if (this.flow.closed !== null) return;
        this.flow.up(chunk.length);
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
    const flow = this.flow;
    if (!flow.live) {
      this.#stopped = flow.closed === null ? 'held' : 'closed';
      return abort(flowStopped(flow.closed ?? 'session paused'));
    }
    this.#abort = abort;
    flow.attach(this);
    const res = this.res;
    res.once('close', () => {
      if (!res.writableFinished) abort(new Error('client closed'));
    });
  }

  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    this.#thawed?.();
    this.#thawed = null;
    const later = this.#later;
    this.#later = [];
    for (const run of later) run();
    const resume = this.#resume;
    if (later.length === 0 || resume === null || this.#completed) return;
    if (this.res.writableNeedDrain) this.res.once('drain', resume);
    else resume();
  }

  close(reason: string): void {
    this.#thawed?.();
    this.#stopped = 'closed';
    this.#abort?.(flowStopped(reason));
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // informational: the final response follows
    this.#resume = resume;
    if (this.#frozen) {
      this.#later.push(() => this.#head(statusCode, raw));
      return false;
    }
    this.#head(statusCode, raw);
    return true;
  }

  #head(statusCode: number, raw: Buffer[]): void {
    this.#status = statusCode;
    const headers = downstreamRawHeaders(raw);
    this.capture?.responseStart(statusCode, headers);
    this.res.writeHead(statusCode, headers);
  }

  onData(chunk: Buffer): boolean {
    if (this.#frozen) {
      this.#later.push(() => this.#write(chunk, false));
      return false;
    }
    return this.#write(chunk, true);
  }

  /** Writes a chunk down; `wake`: undici waits on its return, so resume it on drain. */
  #write(chunk: Buffer, wake: boolean): boolean {
    this.#bytesDown += chunk.length;
    this.capture?.response(chunk);
    if (this.res.write(chunk)) return true;
    if (wake) this.res.once('drain', this.#resume as () => void);
    return false;
  }

  onComplete(): void {
    if (this.#frozen) {
      this.#later.push(() => this.onComplete());
      return;
    }
    this.#completed = true;
    this.res.end();
    this.#done();
  }

  onError(err: Error): void {
    const res = this.res;
    if (this.#stopped !== null) return this.#flowStopped(err.message);
    if (res.destroyed && !res.writableFinished) return this.#done('client closed');
    const failure =
      isTrajgateError(err) && err.code === 'E_BODY_TIMEOUT'
        ? { status: 408, reason: err.message }
        : upstreamFailure(err, this.upstream);
    this.#fail(failure.status, failure.reason);
  }

  /** Held before it was sent: nothing answered, it is judged again. Closed: refused. */
  #flowStopped(reason: string): void {
    if (this.#stopped === 'held') return this.#done(undefined, 'held');
    this.#fail(403, `trajgate closed this request: ${reason}`, 'closed');
  }

  #fail(status: number, reason: string, stopped?: 'closed'): void {
    const res = this.res;
    if (res.headersSent) {
      res.destroy();
    } else if (!res.destroyed) {
      sendRefusal(res, plainRefusal(status, reason));
      this.#status = status;
    }
    this.#done(reason, stopped);
  }

  #done(error?: string, stopped?: 'held' | 'closed'): void {
    clearTimeout(this.#idle);
    this.resolve({
      status: this.#status,
      bytesUp: this.flow.bytesUp,
      bytesDown: this.#bytesDown,
      ...(error === undefined ? {} : { error }),
      ...(stopped === undefined ? {} : { stopped }),
    });
  }
}
