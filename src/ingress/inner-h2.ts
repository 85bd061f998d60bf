import { constants, createServer } from 'node:http2';
import type {
  Http2Server,
  Http2ServerRequest,
  Http2ServerResponse,
  ServerHttp2Session,
} from 'node:http2';
import type { AgentAnswer, AgentRequest } from '../http/agent-message.js';
import type { TLSSocket } from 'node:tls';
import type { FlowControl } from '../action/flows.js';
import { sendRefusal } from '../action/respond.js';
import type { Config } from '../config/load.js';
import type { Drain } from './drain.js';
import { h2RequestProblem } from './h2-rules.js';
import type { InnerHooks } from './inner-handlers.js';
import type { Tunnel } from './tunnel-names.js';
import { SessionGuard } from './h2-session-guard.js';
import { H2Wire } from './h2-wire.js';

/** Concurrent streams an agent may open on one connection (RFC 9113 § 6.5.2). */
const MAX_STREAMS = 100;

/**
 * The HTTP/2 server for intercepted TLS whose agent chose `h2` by ALPN (RFC 9113 § 3.2). Each
 * stream is a request served exactly as an HTTP/1.1 one inside the tunnel (InnerHooks.serve:
 * the same judgement, journal record, flow and refusal, a 403 with the reason on its stream),
 * once its pseudo-headers agree with the tunnel (h2-rules). nghttp2 reads the connection
 * through H2Wire, so that a pause stops it and what nghttp2 refuses by itself is seen. What
 * breaks the connection (malformed frames, floods, rapid resets) is nghttp2's and H2Wire's to
 * catch and SessionGuard's to count: one refusal record per connection, and the connection goes
 * (GOAWAY); a stream nghttp2 resets as malformed gets one of its own.
 */
export class InnerH2 {
  readonly #hooks: InnerHooks;
  readonly #server: Http2Server;
  readonly #drain: Drain;
  readonly #sessions = new Map<ServerHttp2Session, SessionGuard>();
  /** The connection being handed over (the 'session' event is synchronous). */
  #handing: { readonly tunnel: Tunnel; readonly socket: TLSSocket; readonly wire: H2Wire } | null =
    null;
  /** The guard of the connection just handed over. */
  #handed: SessionGuard | null = null;

  constructor(
    config: {
      readonly limits: Pick<Config['limits'], 'headerBytes' | 'keepAliveIdle'>;
    },
    drain: Drain,
    hooks: InnerHooks,
  ) {
    this.#hooks = hooks;
    this.#drain = drain;
    this.#server = createServer({
      settings: {
        enablePush: false,
        maxConcurrentStreams: MAX_STREAMS,
        maxHeaderListSize: config.limits.headerBytes,
      },
      maxHeaderListPairs: 256,
      maxSessionMemory: 8,
      maxSettings: 32,
      maxSessionInvalidFrames: 16,
      maxSessionRejectedStreams: 16,
    });
    this.#server.on('session', (session: ServerHttp2Session) => {
      const handing = this.#handing;
      if (handing === null) return session.destroy();
      const { tunnel, socket, wire } = handing;
      const guard = new SessionGuard(
        session,
        socket,
        tunnel,
        config.limits.keepAliveIdle,
        hooks.refuse,
      );
      wire.watchWith(guard);
      this.#sessions.set(session, guard);
      this.#handed = guard;
      session.once('close', () => this.#sessions.delete(session));
    });
    this.#server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) =>
      this.#request(req, res),
    );
    // A tunnel within a tunnel (RFC 9113 § 8.5) would hide its requests again, as in HTTP/1.1.
    this.#server.on('connect', (req: Http2ServerRequest, res: Http2ServerResponse) => {
      const tunnel = this.#sessions.get(req.stream.session as ServerHttp2Session)?.tunnel;
      if (tunnel === undefined) return void req.stream.close(constants.NGHTTP2_REFUSED_STREAM);
      const why = 'CONNECT inside TLS is not allowed: send requests, not another tunnel';
      const target = req.headers[':authority'] ?? '';
      sendRefusal(res as unknown as AgentAnswer, hooks.refuse(tunnel, 405, why, target));
    });
    drain.atStart(() => this.closeIdle());
  }

  /**
   * Serves HTTP/2 read from `socket` (decrypted TLS that negotiated `h2`) until it closes;
   * returns the connection's control as a flow.
   */
  serve(socket: TLSSocket, tunnel: Tunnel): FlowControl {
    // What tls.Server does before 'secureConnection': an HTTP/2 session waits for a socket
    // still marked as connecting to finish, and a server's never says it has by itself.
    (socket as TLSSocket & { secureConnecting: boolean }).secureConnecting = false;
    const wire = new H2Wire(socket);
    this.#handing = { tunnel, socket, wire };
    try {
      this.#server.emit('connection', wire);
      const guard = this.#handed;
      if (guard === null) throw new Error('node:http2 made no session of the connection');
      return guard.flow;
    } finally {
      this.#handing = null;
      this.#handed = null;
    }
  }

  /** A reload's `limits.keepAliveIdle`, from each connection's next quiet spell. */
  keepAlive(ms: number): void {
    for (const guard of this.#sessions.values()) guard.idle(ms);
  }

  /** At a drain: every connection is told to open no more streams (GOAWAY, RFC 9113 § 6.8). */
  closeIdle(): void {
    for (const session of this.#sessions.keys()) session.close();
  }

  close(): void {
    for (const session of this.#sessions.keys()) session.destroy();
    this.#sessions.clear();
  }

  #request(req: Http2ServerRequest, res: Http2ServerResponse): void {
    const guard = this.#sessions.get(req.stream.session as ServerHttp2Session);
    if (guard === undefined) return void req.stream.close(constants.NGHTTP2_REFUSED_STREAM);
    // Judged a turn later: a stream the agent reset at once (rapid reset, CVE-2023-44487) is
    // counted by the guard, not judged and journaled one by one.
    setImmediate(() => {
      if (guard.judge(req.stream)) this.#serve(req, res, guard.tunnel);
    });
  }

  #serve(req: Http2ServerRequest, res: Http2ServerResponse, tunnel: Tunnel): void {
    const http1Req = req as unknown as AgentRequest;
    const http1Res = res as unknown as AgentAnswer;
    const checked = h2RequestProblem(req, tunnel);
    if (!checked.ok) {
      const refusal = this.#hooks.refuse(tunnel, checked.status, checked.reason, checked.target);
      return sendRefusal(http1Res, refusal);
    }
    const served = this.#hooks.serve(http1Req, http1Res, checked.url, tunnel);
    this.#drain.track('request', served);
    served.catch(() => res.stream.close(constants.NGHTTP2_INTERNAL_ERROR));
  }
}
