import type { Socket } from 'node:net';
import { errors } from '../undici.js';
import type { ConnectionOwner } from './h1-connection.js';
import { H1Connection } from './h1-connection.js';
import type { H1Handler, H1Request } from './h1-exchange.js';
import { Exchange } from './h1-exchange.js';
import { requestHead } from './h1-request.js';
import type { RequestHead } from './h1-request.js';
import type { LeanConnect } from './upstream-connect.js';
import { plainLean } from './upstream-connect.js';

/** An idle connection closes after this long, unless its upstream hinted otherwise (undici's). */
const IDLE_MS = 4_000;

export interface H1PoolLimits {
  readonly connectTimeout: number;
  /** Longest upstream silence before its answer's head and between its body's chunks. */
  readonly upstreamTimeout: number;
}

/**
 * The lean engine's client for HTTP/1.1 upstreams (`engine: lean`), plain or over TLS (as
 * `open` connects): keep-alive connections per authority, as many as requests at once, each
 * answer parsed by Node's own llhttp and told to a dispatch handler as undici's Agent tells it
 * (ResponseRelay serves both), with the same bytes sent up and the same errors, so failures
 * map the same way (upstreamFailure). Without undici's per-request objects (its Request, queue
 * and timers).
 */
export class H1Pool implements ConnectionOwner {
  /** Idle connections per key, the most recently used last. */
  readonly #idle = new Map<string, H1Connection[]>();
  readonly #timeouts: { upstream: number; idle: number };
  #inFlight = 0;
  #closed = false;
  #drained: (() => void) | null = null;

  /** `open`: plain TCP to the address egress checked (default), or TLS (tlsLean). */
  constructor(
    limits: H1PoolLimits,
    private readonly open: LeanConnect = plainLean(limits.connectTimeout),
  ) {
    this.#timeouts = { upstream: limits.upstreamTimeout, idle: IDLE_MS };
  }

  dispatch(req: H1Request, handler: H1Handler): void {
    if (this.#closed) return handler.onError(new errors.ClientClosedError());
    let head: RequestHead;
    try {
      head = requestHead(req.method, req.path, req.headers, req.authority);
    } catch (err) {
      return handler.onError(err as Error);
    }
    this.#inFlight++;
    const exchange = new Exchange(
      req,
      head,
      handler,
      (again) => this.#connect(again),
      () => this.#settled(),
    );
    const conn = this.#take(req.authority);
    if (conn === null) this.#connect(exchange);
    else exchange.start(conn);
  }

  /** The most recently used idle connection to `key` (likeliest still open), or null. */
  #take(key: string): H1Connection | null {
    const list = this.#idle.get(key);
    if (list === undefined) return null;
    let conn = list.pop();
    while (conn !== undefined && conn.socket.destroyed) conn = list.pop();
    if (list.length === 0) this.#idle.delete(key);
    return conn ?? null;
  }

  /** A new connection for `exchange` (a connect error is its answer: nothing was sent). */
  #connect(exchange: Exchange): void {
    const { address, port, authority } = exchange.req;
    // Assigned before the socket can read: a read needs a request written first.
    let conn: H1Connection | null = null;
    this.open(
      address,
      port,
      (view) => (conn as H1Connection).read(view),
      (err: Error | null, socket: Socket | null) => {
        if (err !== null) return exchange.fail(err, false);
        conn = new H1Connection(socket as Socket, authority, this, this.#timeouts);
        exchange.start(conn);
      },
    );
  }

  idle(conn: H1Connection): void {
    if (conn.socket.destroyed || conn.exchange !== null) return;
    if (this.#closed) return conn.drop();
    const list = this.#idle.get(conn.key);
    if (list === undefined) this.#idle.set(conn.key, [conn]);
    else list.push(conn);
  }

  gone(conn: H1Connection): void {
    const list = this.#idle.get(conn.key);
    const at = list?.indexOf(conn) ?? -1;
    if (at < 0) return;
    (list as H1Connection[]).splice(at, 1);
    if (list?.length === 0) this.#idle.delete(conn.key);
  }

  #settled(): void {
    if (--this.#inFlight === 0) this.#drained?.();
  }

  /** Closes the idle connections; resolves once the requests under way end (as Agent.close). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const list of this.#idle.values()) for (const conn of list) conn.drop();
    this.#idle.clear();
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
  }
}
