import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import type { AgentAnswer, AgentHead, AgentRequest } from '../http/agent-message.js';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { dropIfAnswered, writeRawRefusal } from '../action/respond.js';
import { handleConnect } from './connect.js';
import { capConnections } from './connection-cap.js';
import { openFilesLimit } from './open-files.js';
import type { ProxyContext } from './context.js';
import { handleHttp } from './http.js';
import { clientAddress } from './identity.js';
import type { Problem } from './request-rules.js';
import { parseErrorProblem } from './request-rules.js';
import type { Refusal } from '../action/refusal.js';
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

/**
 * What an HTTP/1.1 engine calls for what it read: on the listener (this one, or
 * lean/lean-server.ts) the proxy's handlers, inside a read tunnel the tunnel's (inner-handlers.ts).
 */
export interface ProxyHandlers {
  request(req: AgentRequest, res: AgentAnswer): void;
  /** CONNECT, or a request that upgrades: `head` is what came after its head. */
  raw(kind: 'connect' | 'upgrade', req: AgentHead, socket: Socket, head: Buffer): void;
  /** A request that could not be parsed (or whose head came too late). */
  clientError(err: Error & { code?: string; reason?: string }, socket: Duplex): void;
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

/**
 * Answers a request the parser refused (or whose head came too late) on its raw socket, with
 * the refusal `refusal` journals; `where` names a tunnel it was read in.
 */
export function refuseParseError(
  err: Error & { code?: string; reason?: string },
  socket: Duplex,
  where: string,
  refusal: (problem: Problem) => Refusal,
): void {
  const problem = parseErrorProblem(err, where);
  // A connection that went away, or that was already answered (the parser then reports the
  // close as a second error), has nobody to answer and nothing new to record.
  if (problem.status === 0 || socket.writableEnded || socket.destroyed) {
    socket.destroy();
    return;
  }
  if (dropIfAnswered(socket)) return;
  writeRawRefusal(socket, refusal(problem));
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
