import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { hostFieldProblem } from '../action/headers.js';
import type { Refusal } from '../action/respond.js';
import { sendRefusal, writeRawRefusal } from '../action/respond.js';
import type { Transfer } from '../action/transfer.js';
import type { Config } from '../config/load.js';
import type { NetworkSubject } from '../event/event.js';
import { canonicalHost } from '../event/network-target.js';
import type { NetworkPattern } from '../guard/network-pattern.js';
import { matchesNetwork, parseNetworkPattern } from '../guard/network-pattern.js';
import type { LeafCache } from '../tls/leaves.js';
import { HeaderDeadlines } from './header-deadline.js';

/** One intercepted CONNECT: who opened it and the authority it named. */
export interface Tunnel {
  readonly session: string;
  readonly client: string;
  /** Canonical host (no brackets) and port from the CONNECT line. */
  readonly host: string;
  readonly port: number;
}

export interface InterceptHooks {
  /** Judges and serves one inner request, as a plain HTTP one with an `https:` URL. */
  serve(req: IncomingMessage, res: ServerResponse, url: URL, tunnel: Tunnel): Promise<void>;
  /** Journals a refusal (handshake failure, Host mismatch) and returns what to answer. */
  refuse(tunnel: Tunnel, status: number, reason: string, target?: string): Refusal;
}

/**
 * TLS interception for CONNECT targets matching `tls.intercept`: trajgate answers the CONNECT,
 * completes the handshake with a leaf certificate for the CONNECT host (signed by its CA), and
 * parses the HTTP/1.1 inside, so every inner request is judged with its method and URL. The
 * names must agree: an SNI other than the CONNECT host fails the handshake, and an inner Host
 * other than the CONNECT authority is answered 421 (RFC 9110 § 15.5.20), so no request can be
 * judged as one host and sent to another.
 */
export class Interceptor {
  readonly #patterns: readonly NetworkPattern[];
  readonly #leaves: LeafCache;
  readonly #hooks: InterceptHooks;
  readonly #handshakeMs: number;
  readonly #tunnels = new WeakMap<object, Tunnel>();
  readonly #inner: Server;
  readonly #deadlines: HeaderDeadlines;

  constructor(config: Config, leaves: LeafCache, hooks: InterceptHooks) {
    this.#patterns = config.tls.intercept.map(parseNetworkPattern);
    this.#leaves = leaves;
    this.#hooks = hooks;
    this.#handshakeMs = config.limits.headerTimeout;
    this.#inner = createServer({
      maxHeaderSize: config.limits.headerBytes,
      requestTimeout: 0,
      keepAliveTimeout: 5_000,
      // Host is checked against the tunnel below, where a refusal can be journaled.
      requireHostHeader: false,
    });
    this.#deadlines = new HeaderDeadlines(config.limits.headerTimeout, (socket, partial) => {
      const tunnel = this.#tunnels.get(socket);
      if (!partial || !tunnel) return socket.destroy();
      writeRawRefusal(
        socket,
        hooks.refuse(tunnel, 408, 'request headers not received in time inside TLS'),
      );
    });
    this.#inner.on('request', (req, res) => {
      this.#deadlines.clear(req.socket as Socket);
      res.once('finish', () => this.#deadlines.watch(req.socket as Socket, false));
      this.#request(req, res);
    });
    this.#inner.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      const tunnel = this.#tunnels.get(socket);
      if (!tunnel || socket.writableEnded || socket.destroyed || err.code === 'ECONNRESET')
        return socket.destroy();
      writeRawRefusal(
        socket,
        hooks.refuse(tunnel, 400, `malformed request inside TLS (${err.code ?? err.message})`),
      );
    });
  }

  matches(subject: NetworkSubject): boolean {
    return this.#patterns.some((p) => matchesNetwork(p, subject));
  }

  /** Answers the CONNECT and terminates TLS; resolves when the tunnel closes. */
  open(socket: Duplex, head: Buffer, tunnel: Tunnel): Promise<Omit<Transfer, 'status'>> {
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    let secured = false;
    let failed: string | undefined;
    const tls = new TLSSocket(socket as Socket, {
      isServer: true,
      secureContext: this.#leaves.context(tunnel.host),
      ALPNProtocols: ['http/1.1'],
      SNICallback: (servername, callback) => {
        let name: string | null = null;
        try {
          name = canonicalHost(servername);
        } catch {
          // an unparsable name is refused below like any other mismatch
        }
        if (name !== tunnel.host) {
          return callback(
            new Error(
              `SNI ${JSON.stringify(servername)} does not match the CONNECT host ${tunnel.host}`,
            ),
            undefined,
          );
        }
        callback(null, this.#leaves.context(tunnel.host));
      },
    });
    const fail = (status: number, reason: string) => {
      if (failed !== undefined) return;
      failed = reason;
      this.#hooks.refuse(tunnel, status, reason);
      tls.destroy();
    };
    const timer = setTimeout(
      () => fail(408, `TLS handshake not completed within ${this.#handshakeMs} ms`),
      this.#handshakeMs,
    );
    tls.once('secure', () => {
      secured = true;
      clearTimeout(timer);
      this.#tunnels.set(tls, tunnel);
      this.#deadlines.watch(tls, true);
      this.#inner.emit('connection', tls);
    });
    tls.on('error', (err: Error & { reason?: string; code?: string }) => {
      // OpenSSL's messages span lines and name source files: its reason is the readable part.
      const why = err.reason ?? err.code ?? err.message.split('\n')[0];
      if (!secured) fail(400, `TLS handshake with the agent failed: ${why}`);
      else tls.destroy();
    });
    // The proxy's sockets allow half-open connections, so the agent's end does not close
    // the TLS socket by itself: an end before the handshake is a refusal, after it a close.
    tls.once('end', () => {
      if (!secured)
        fail(
          400,
          "TLS handshake abandoned: the agent closed the connection (as an agent that does not trust trajgate's CA does)",
        );
      tls.destroy();
    });
    return new Promise((resolve) =>
      tls.once('close', () => {
        this.#deadlines.clear(tls);
        clearTimeout(timer);
        const s = socket as Socket;
        resolve({
          bytesUp: s.bytesRead ?? 0,
          bytesDown: s.bytesWritten ?? 0,
          ...(failed ? { error: failed } : {}),
        });
      }),
    );
  }

  close(): void {
    this.#inner.closeAllConnections();
    this.#inner.close();
  }

  #request(req: IncomingMessage, res: ServerResponse): void {
    const tunnel = this.#tunnels.get(req.socket);
    if (!tunnel) {
      res.destroy();
      return;
    }
    const authority = tunnel.host.includes(':') ? `[${tunnel.host}]` : tunnel.host;
    const origin = `https://${authority}${tunnel.port === 443 ? '' : `:${tunnel.port}`}`;
    const target = req.url ?? '/';
    // Inside a tunnel Host is required whatever the version: it is checked against the tunnel.
    const hostProblem = hostFieldProblem(req.rawHeaders, true);
    if (hostProblem) {
      sendRefusal(
        res,
        this.#hooks.refuse(tunnel, 400, `${hostProblem} in a request inside TLS`, target),
      );
      return;
    }
    const url = target.startsWith('/') ? safeUrl(origin + target) : safeUrl(target);
    const host = hostOf(req.headers.host);
    if (
      url === null ||
      url.origin !== origin ||
      host === null ||
      host !== `${tunnel.host}:${tunnel.port}`
    ) {
      const reason = `Host ${JSON.stringify(req.headers.host ?? '')} and target ${JSON.stringify(target.slice(0, 200))} do not match the tunnel to ${authority}:${tunnel.port}`;
      sendRefusal(res, this.#hooks.refuse(tunnel, 421, reason, target));
      return;
    }
    this.#hooks.serve(req, res, url, tunnel).catch(() => res.destroy());
  }
}

function safeUrl(text: string): URL | null {
  return URL.canParse(text) ? new URL(text) : null;
}

/** `host:port` of a Host header in canonical form (port 443 when absent), or null. */
function hostOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(header);
  if (!m) return null;
  try {
    return `${canonicalHost(m[1] as string)}:${m[2] ?? '443'}`;
  } catch {
    return null;
  }
}
