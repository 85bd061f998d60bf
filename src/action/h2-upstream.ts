import { connect as http2Connect } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Dispatcher, buildConnector } from 'undici';
import { exchange } from './h2-exchange.js';
import type { H2Handler, H2Request } from './h2-exchange.js';

/** An idle session closes after this long without a stream, as undici's keep-alive. */
const IDLE_SESSION_MS = 4_000;
/** Origins remembered as HTTP/1.1-only; the set is cleared when it grows past this. */
const H1_ORIGINS = 1_024;

type Entry = Promise<ClientHttp2Session | null>;

interface Live {
  readonly origin: string;
  readonly entry: Entry;
  streams: number;
  idle?: NodeJS.Timeout;
}

/**
 * HTTP/2 to upstreams that offer it by ALPN, on node:http2: one multiplexed session per
 * origin, connected by `connect` (egress checks, upstream trust). undici's HTTP/2 client
 * (7.30) cannot relay gRPC: when trailers arrive while a response it was asked to pause still
 * holds DATA, it drops that DATA and completes (client-h2.js: 'trailers' removes the 'data'
 * listener), so an answer longer than the agent's window lost its tail; and it opens a
 * connection per POST in flight. An origin that picks HTTP/1.1 is remembered and served by
 * `fallback` (undici).
 */
export class H2Upstream {
  /** Each origin's session, or null for an HTTP/1.1-only origin, while it connects or serves. */
  readonly #sessions = new Map<string, Entry>();
  readonly #h1 = new Set<string>();
  readonly #live = new Map<ClientHttp2Session, Live>();
  #closed = false;

  constructor(
    private readonly connect: buildConnector.connector,
    private readonly fallback: Dispatcher,
  ) {}

  dispatch(req: H2Request, handler: H2Handler): void {
    if (this.#h1.has(req.origin)) return this.#viaFallback(req, handler);
    const entry = this.#session(req.origin);
    entry.then(
      (session) => {
        if (session === null) return this.#viaFallback(req, handler);
        const live = this.#live.get(session);
        // Closing (idle, GOAWAY): a new session takes the request.
        if (live === undefined || session.closed || session.destroyed) {
          this.#forget(req.origin, entry);
          return this.dispatch(req, handler);
        }
        live.streams++;
        clearTimeout(live.idle);
        exchange(session, req, handler, () => {
          if (--live.streams === 0) this.#quiet(session, live);
        });
      },
      (err: Error) => handler.onError(err),
    );
  }

  /** Closes every session once its streams end. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#sessions.clear();
    await Promise.all([...this.#live.keys()].map((s) => new Promise<void>((r) => s.close(r))));
  }

  #viaFallback({ origin, path, method, headers, body }: H2Request, handler: H2Handler): void {
    const request = { origin, path, method: method as Dispatcher.HttpMethod, body };
    this.fallback.dispatch({ ...request, headers: [...headers] }, handler);
  }

  #session(origin: string): Entry {
    const known = this.#sessions.get(origin);
    if (known !== undefined) return known;
    const entry: Entry = new Promise((resolve, reject) => {
      const url = new URL(origin);
      const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const options = { hostname, host: hostname, protocol: url.protocol, port: url.port };
      this.connect(options as buildConnector.Options, (err, socket) => {
        if (err !== null || socket === null) return reject(err ?? new Error('no connection'));
        if (this.#closed) {
          socket.destroy();
          return reject(new Error('the forwarder is closed'));
        }
        if ((socket as TLSSocket).alpnProtocol === 'h2')
          return resolve(this.#open(origin, entry, socket as Socket));
        // This connection is dropped; undici makes its own HTTP/1.1 ones from now on.
        socket.destroy();
        if (this.#h1.size >= H1_ORIGINS) this.#h1.clear();
        this.#h1.add(origin);
        this.#forget(origin, entry);
        resolve(null);
      });
    });
    entry.catch(() => this.#forget(origin, entry));
    this.#sessions.set(origin, entry);
    return entry;
  }

  #open(origin: string, entry: Entry, socket: Socket): ClientHttp2Session {
    const session = http2Connect(origin, {
      createConnection: () => socket,
      settings: { enablePush: false },
    });
    const live: Live = { origin, entry, streams: 0 };
    this.#live.set(session, live);
    this.#quiet(session, live);
    // A session's error reaches each of its streams; the session is only forgotten.
    session.on('error', () => {});
    session.once('goaway', () => this.#forget(origin, entry));
    session.once('close', () => {
      clearTimeout(live.idle);
      this.#live.delete(session);
      this.#forget(origin, entry);
    });
    return session;
  }

  /** No stream open: the session closes unless one opens within IDLE_SESSION_MS. */
  #quiet(session: ClientHttp2Session, live: Live): void {
    clearTimeout(live.idle);
    live.idle = setTimeout(() => {
      this.#forget(live.origin, live.entry);
      session.close();
    }, IDLE_SESSION_MS).unref();
  }

  #forget(origin: string, entry: Entry): void {
    if (this.#sessions.get(origin) === entry) this.#sessions.delete(origin);
  }
}
