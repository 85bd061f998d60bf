import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { Refusal } from '../action/refusal.js';
import { dropIfAnswered, sendRefusal, writeRawRefusal } from '../action/respond.js';
import type { Config } from '../config/load.js';
import type { Drain } from './drain.js';
import { HeaderDeadlines } from './header-deadline.js';
import type { Problem } from './request-rules.js';
import { CLOSE, parseErrorProblem, requestProblem } from './request-rules.js';
import type { RawRefuser, RawRequest } from './raw-request.js';
import type { Tunnel } from './tunnel-names.js';
import { DEFAULT_PORT, hostOf, safeUrl, tunnelHost, tunnelOrigin } from './tunnel-names.js';

export interface InnerHooks {
  /** Judges and serves one inner request, as a plain HTTP one with its full URL. */
  serve(req: IncomingMessage, res: ServerResponse, url: URL, tunnel: Tunnel): Promise<void>;
  /**
   * Judges and serves one inner Upgrade (its checks passed) as a request to `url`: the
   * connection is the upgrade's from here on.
   */
  upgrade(raw: RawRequest, url: URL, tunnel: Tunnel): Promise<void>;
  /** Journals a refusal (bad request, Host mismatch) and returns what to answer. */
  refuse(tunnel: Tunnel, status: number, reason: string, target?: string): Refusal;
}

/**
 * The HTTP/1.1 server for requests read from inside a CONNECT tunnel (decrypted TLS, or plain
 * HTTP sent through CONNECT as undici does for `http://` URLs), so each is judged with its
 * method and URL like an absolute-form request. Names must agree with the tunnel: an inner Host
 * or absolute-form target other than the CONNECT authority is answered 421 (RFC 9110
 * § 15.5.20), so no request is judged as one host and sent to another. Every other rule is
 * requestProblem's, the listener's own: no path into judgement skips one.
 */
export class InnerHttp {
  readonly #hooks: InnerHooks;
  readonly #tunnels = new WeakMap<object, Tunnel>();
  readonly #server: Server;
  readonly #deadlines: HeaderDeadlines;
  readonly #drain: Drain;

  constructor(
    config: {
      readonly limits: Pick<Config['limits'], 'headerBytes' | 'headerTimeout' | 'keepAliveIdle'>;
    },
    drain: Drain,
    hooks: InnerHooks,
  ) {
    this.#hooks = hooks;
    this.#drain = drain;
    this.#server = createServer({
      maxHeaderSize: config.limits.headerBytes,
      requestTimeout: 0,
      keepAliveTimeout: config.limits.keepAliveIdle,
      // Host is checked against the tunnel below, where a refusal can be journaled.
      requireHostHeader: false,
    });
    this.#deadlines = new HeaderDeadlines(config.limits.headerTimeout, (socket) => {
      const tunnel = this.#tunnels.get(socket);
      if (!tunnel) return socket.destroy();
      writeRawRefusal(
        socket,
        hooks.refuse(tunnel, 408, `request headers not received in time${where(tunnel)}`),
      );
    });
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      this.#deadlines.clear(req.socket as Socket);
      res.once('finish', () => this.#deadlines.watch(req.socket as Socket, false));
      this.#request(req, res);
    };
    this.#server.on('request', onRequest);
    // Expectations are answered by trajgate, as on the proxy listener (see createProxyServer).
    this.#server.on('checkContinue', onRequest);
    this.#server.on('checkExpectation', onRequest);
    this.#server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      const tunnel = this.#tunnels.get(socket);
      const { status, reason } = parseErrorProblem(err, tunnel ? where(tunnel) : '');
      if (!tunnel || status === 0 || socket.writableEnded || socket.destroyed)
        return socket.destroy();
      if (dropIfAnswered(socket)) return;
      writeRawRefusal(socket, hooks.refuse(tunnel, status, reason));
    });
    // An Upgrade is checked here as a request is; without this listener Node would serve it as
    // a plain request, its Upgrade dropped upstream as hop-by-hop, so it could never switch.
    this.#server.on('upgrade', (req: IncomingMessage, duplex: Duplex, head: Buffer) => {
      const start = performance.now();
      const socket = duplex as Socket;
      this.#deadlines.clear(socket);
      const tunnel = this.#tunnels.get(socket);
      if (!tunnel) return socket.destroy();
      const target = req.url ?? '/';
      // A raw refusal always closes (its session is the tunnel's).
      const refuse: RawRefuser = (status, reason) =>
        writeRawRefusal(socket, hooks.refuse(tunnel, status, reason, target));
      const checked = this.#check(req, tunnel);
      if (!('url' in checked)) return refuse(checked.status, checked.reason);
      const served = hooks.upgrade({ req, socket, head, start, refuse }, checked.url, tunnel);
      drain.track('tunnel', served);
      served.catch(() => socket.destroy());
    });
    // A tunnel within a tunnel would hide its requests again (Node would drop it unanswered).
    this.#server.on('connect', (req: IncomingMessage, socket: Duplex) => {
      const tunnel = this.#tunnels.get(socket);
      if (!tunnel) return socket.destroy();
      const why = `CONNECT${where(tunnel)} is not allowed: send requests, not another tunnel`;
      writeRawRefusal(socket, hooks.refuse(tunnel, 405, why, req.url ?? ''));
    });
    // This server never listens, so Node knows none of its connections: idle ones are ours.
    drain.attachInner(this.#server, () => this.#deadlines.closeIdle());
  }

  /** Serves HTTP read from `socket` (the tunnel's bytes, decrypted when TLS) until it closes. */
  serve(socket: Socket, tunnel: Tunnel): void {
    socket.once('close', () => this.#deadlines.clear(socket));
    this.#tunnels.set(socket, tunnel);
    this.#deadlines.watch(socket, true);
    this.#server.emit('connection', socket);
  }

  /**
   * A reload's `limits.keepAliveIdle`: Node reads it each time a response ends, so it applies
   * from the next one, as on the proxy listener.
   */
  keepAlive(ms: number): void {
    this.#server.keepAliveTimeout = ms;
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }

  #request(req: IncomingMessage, res: ServerResponse): void {
    const tunnel = this.#tunnels.get(req.socket);
    if (!tunnel) {
      res.destroy();
      return;
    }
    const checked = this.#check(req, tunnel);
    if (!('url' in checked)) {
      const refusal = this.#hooks.refuse(tunnel, checked.status, checked.reason, req.url ?? '/');
      return sendRefusal(res, refusal, checked.headers);
    }
    const served = this.#hooks.serve(req, res, checked.url, tunnel);
    this.#drain.track('request', served);
    served.catch(() => res.destroy());
  }

  /** The URL an inner request is judged as, or why it is refused. */
  #check(
    req: IncomingMessage,
    tunnel: Tunnel,
  ): { readonly url: URL } | (Problem & { readonly headers?: Record<string, string> }) {
    const authority = tunnelHost(tunnel);
    const defaultPort = DEFAULT_PORT[tunnel.scheme];
    const origin = tunnelOrigin(tunnel);
    const target = req.url ?? '/';
    const url = target.startsWith('/') ? safeUrl(origin + target) : safeUrl(target);
    // The same rules as on the listener, word for word; Host is required whatever the version,
    // as it is checked against the tunnel.
    const problem = url === null ? null : requestProblem(req, url, true);
    if (problem !== null) return { ...problem, headers: CLOSE };
    const host = hostOf(req.headers.host, defaultPort);
    if (url === null || url.origin !== origin || host !== `${tunnel.host}:${tunnel.port}`) {
      const reason = `Host ${JSON.stringify(req.headers.host ?? '')} and target ${JSON.stringify(target.slice(0, 200))} do not match the tunnel to ${authority}:${tunnel.port}`;
      return { status: 421, reason };
    }
    return { url };
  }
}

function where(tunnel: Tunnel): string {
  return tunnel.scheme === 'https' ? ' inside TLS' : ' inside a CONNECT tunnel';
}
