import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import type { AgentAnswer, AgentHead, AgentRequest } from '../http/agent-message.js';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { handleConnect } from './connect.js';
import type { ProxyHandlers } from './engine-handlers.js';
import { refuseParseError } from './engine-handlers.js';
import { capConnections } from './connection-cap.js';
import { openFilesLimit } from './open-files.js';
import type { ProxyContext } from './context.js';
import { handleHttp } from './http.js';
import { clientAddress } from './identity.js';
import { rawRefuser } from './tunnel-track.js';
import { handleUpgrade } from './upgrade.js';

/**
 * The forward proxy listener. Node's HTTP parser (llhttp, strict mode) already refuses
 * request-smuggling shapes: conflicting Content-Length, Transfer-Encoding with a final coding
 * other than chunked (RFC 9112 § 6.3); those arrive here as client errors, each answered with
 * a status and a reason and journaled. A handler that throws is logged and answered 500; the
 * process never goes down for one request. Its keep-alive idle time is set by its part
 * (`limits.keepAliveIdle`, gateway/ingress.ts); its connections are capped (connection-cap.ts).
 */
export function createProxyServer(ctx: ProxyContext): Server {
  const server = createServer(proxyServerOptions(ctx.limits));
  capProxyConnections(server, ctx);
  const handlers = proxyHandlers(ctx);
  server.on('request', handlers.request);
  // Expectations are answered by trajgate, not by Node: 100 Continue only once judged (see
  // Forwarder), anything else 417 with a journal record (see serveHttp).
  server.on('checkContinue', handlers.request);
  server.on('checkExpectation', handlers.request);
  const onRaw =
    (kind: 'connect' | 'upgrade') =>
    (req: IncomingMessage, duplex: Duplex, head: Buffer): void =>
      // A TCP listener's connection: Node's types only say Duplex.
      handlers.raw(kind, req, duplex as Socket, head);
  server.on('connect', onRaw('connect'));
  server.on('upgrade', onRaw('upgrade'));
  server.on('clientError', handlers.clientError);
  return server;
}

/** The connection cap (connection-cap.ts) with the limits in force at each accept. */
export function capProxyConnections(server: NetServer, ctx: ProxyContext): void {
  // `ctx.limits` is replaced whole by a reload: read at each accept.
  capConnections(
    server,
    () => ctx.limits.maxConnections,
    openFilesLimit(),
    (limit, reason) => ctx.limitLog.refused(limit, reason),
  );
}

export function proxyHandlers(ctx: ProxyContext): ProxyHandlers {
  const crashed = (err: unknown, what: string) => ctx.log.error({ err }, `proxy: ${what} failed`);
  const request = (req: AgentRequest, res: AgentAnswer): void => {
    const handled = handleHttp(ctx, req, res);
    ctx.drain.track('request', handled);
    handled.catch((err: unknown) => {
      crashed(err, 'request');
      if (!res.headersSent) res.writeHead(500).end('trajgate: internal error\n');
      else res.destroy();
    });
  };
  const raw = (kind: 'connect' | 'upgrade', req: AgentHead, socket: Socket, head: Buffer) => {
    const start = performance.now();
    socket.on('error', () => socket.destroy());
    const refuse = rawRefuser(ctx, req, socket);
    const handled = (kind === 'connect' ? handleConnect : handleUpgrade)(ctx, {
      req,
      socket,
      head,
      start,
      refuse,
    });
    ctx.drain.track('tunnel', handled);
    handled.catch((err: unknown) => {
      crashed(err, kind === 'connect' ? 'CONNECT' : 'upgrade');
      socket.destroy();
    });
  };
  const clientError = (err: Error & { code?: string; reason?: string }, socket: Duplex) =>
    refuseParseError(err, socket, '', ({ status, reason }) => {
      const remote = (socket as Duplex & { remoteAddress?: string }).remoteAddress;
      return ctx.pipeline.refusal(
        { source: 'proxy', client: clientAddress(remote) },
        status,
        reason,
      );
    });
  return { request, raw, clientError };
}

/** How the listener's `node:http` parses: also the reference the lean parser is tested against. */
export function proxyServerOptions(
  limits: Pick<ProxyContext['limits'], 'headerBytes' | 'headerTimeout'>,
): ServerOptions {
  return {
    maxHeaderSize: limits.headerBytes,
    headersTimeout: limits.headerTimeout,
    requestTimeout: 0,
    connectionsCheckingInterval: Math.min(1_000, limits.headerTimeout),
    // Host is checked in handleHttp, where a refusal is journaled (Node's own 400 is not).
    requireHostHeader: false,
  };
}
