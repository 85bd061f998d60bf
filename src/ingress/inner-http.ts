import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from '../config/load.js';
import type { Drain } from './drain.js';
import { HeaderDeadlines } from './header-deadline.js';
import type { InnerHooks } from './inner-handlers.js';
import { tunnelHandlers } from './inner-handlers.js';
import { LeanInner } from './lean/lean-inner.js';
import type { ProxyHandlers } from './engine-handlers.js';
import { lateHead } from './request-rules.js';
import type { Tunnel } from './tunnel-names.js';

/** The limits inner connections are read with: those at start (a reload changes keep-alive). */
export type InnerLimits = Pick<Config['limits'], 'headerBytes' | 'headerTimeout' | 'keepAliveIdle'>;

/**
 * The HTTP/1.1 server for requests read from inside a CONNECT tunnel (decrypted TLS, or plain
 * HTTP sent through CONNECT as undici does for `http://` URLs), so each is judged with its
 * method and URL like an absolute-form request (inner-handlers.ts), on the listener's engine.
 */
export interface InnerHttp {
  /** Serves HTTP read from `socket` (the tunnel's bytes, decrypted when TLS) until it closes. */
  serve(socket: Socket, tunnel: Tunnel): void;
  /** A reload's `limits.keepAliveIdle`: it applies from the next answer, as on the listener. */
  keepAlive(ms: number): void;
  close(): void;
}

/** The inner server of `config.engine` (fixed at start, as the listener's). */
export function createInnerHttp(
  config: { readonly limits: InnerLimits; readonly engine: Config['engine'] },
  drain: Drain,
  hooks: InnerHooks,
): InnerHttp {
  return config.engine === 'lean'
    ? new LeanInner(config.limits, drain, hooks)
    : new NodeInner(config.limits, drain, hooks);
}

/**
 * The inner server on node:http: a server that never listens, each tunnel's socket handed to
 * it as a connection. Node enforces no header deadline there (HeaderDeadlines does) and knows
 * none of its connections (idle ones at a drain are HeaderDeadlines' too).
 */
class NodeInner implements InnerHttp {
  readonly #handlers = new WeakMap<object, ProxyHandlers>();
  readonly #server: Server;
  readonly #deadlines: HeaderDeadlines;
  readonly #hooks: InnerHooks;
  readonly #drain: Drain;

  constructor(limits: InnerLimits, drain: Drain, hooks: InnerHooks) {
    this.#hooks = hooks;
    this.#drain = drain;
    this.#server = createServer({
      maxHeaderSize: limits.headerBytes,
      requestTimeout: 0,
      keepAliveTimeout: limits.keepAliveIdle,
      // Host is checked against the tunnel (inner-handlers.ts), where a refusal is journaled.
      requireHostHeader: false,
    });
    this.#deadlines = new HeaderDeadlines(limits.headerTimeout, (socket) =>
      this.#handled(socket)?.clientError(lateHead(), socket),
    );
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket as Socket;
      this.#deadlines.clear(socket);
      res.once('finish', () => this.#deadlines.watch(socket, false));
      const handlers = this.#handlers.get(socket);
      if (handlers === undefined) res.destroy();
      else handlers.request(req, res);
    };
    this.#server.on('request', onRequest);
    // Expectations are answered by trajgate, as on the proxy listener (see createProxyServer).
    this.#server.on('checkContinue', onRequest);
    this.#server.on('checkExpectation', onRequest);
    this.#server.on('clientError', (err: Error & { code?: string }, socket: Duplex) =>
      this.#handled(socket)?.clientError(err, socket),
    );
    const onRaw =
      (kind: 'connect' | 'upgrade') =>
      (req: IncomingMessage, duplex: Duplex, head: Buffer): void => {
        const socket = duplex as Socket;
        this.#deadlines.clear(socket);
        this.#handled(socket)?.raw(kind, req, socket, head);
      };
    // An Upgrade is checked as a request is; without this listener Node would serve it as a
    // plain request, its Upgrade dropped upstream as hop-by-hop, so it could never switch.
    this.#server.on('upgrade', onRaw('upgrade'));
    // Without this listener Node would drop a CONNECT unanswered: it is refused, journaled.
    this.#server.on('connect', onRaw('connect'));
    drain.attachInner(this.#server, () => this.#deadlines.closeIdle());
  }

  serve(socket: Socket, tunnel: Tunnel): void {
    socket.once('close', () => this.#deadlines.clear(socket));
    this.#handlers.set(socket, tunnelHandlers(tunnel, this.#hooks, this.#drain));
    this.#deadlines.watch(socket, true);
    this.#server.emit('connection', socket);
  }

  /** Node reads it each time a response ends, so it applies from the next one. */
  keepAlive(ms: number): void {
    this.#server.keepAliveTimeout = ms;
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }

  /** The tunnel's handlers, or none: the socket is closed (it was never served). */
  #handled(socket: Duplex): ProxyHandlers | undefined {
    const handlers = this.#handlers.get(socket);
    if (handlers === undefined) socket.destroy();
    return handlers;
  }
}
