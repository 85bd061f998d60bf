import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { dropIfAnswered, writeRawRefusal } from '../action/respond.js';
import { handleConnect } from './connect.js';
import { capConnections } from './connection-cap.js';
import { openFilesLimit } from './open-files.js';
import type { ProxyContext } from './context.js';
import { handleHttp } from './http.js';
import { clientAddress } from './identity.js';
import { parseErrorProblem } from './request-rules.js';
import type { RawRequest } from './raw-request.js';
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
  // `ctx.limits` is replaced whole by a reload: read at each accept.
  capConnections(
    server,
    () => ctx.limits.maxConnections,
    openFilesLimit(),
    (limit, reason) => ctx.limitLog.refused(limit, reason),
  );
  const crashed = (err: unknown, what: string) => ctx.log.error({ err }, `proxy: ${what} failed`);
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const handled = handleHttp(ctx, req, res);
    ctx.drain.track('request', handled);
    handled.catch((err: unknown) => {
      crashed(err, 'request');
      if (!res.headersSent) res.writeHead(500).end('trajgate: internal error\n');
      else res.destroy();
    });
  };
  server.on('request', onRequest);
  // Expectations are answered by trajgate, not by Node: 100 Continue only once judged (see
  // Forwarder), anything else 417 with a journal record (see serveHttp).
  server.on('checkContinue', onRequest);
  server.on('checkExpectation', onRequest);
  const onRaw =
    (what: string, handle: (ctx: ProxyContext, raw: RawRequest) => Promise<void>) =>
    (req: IncomingMessage, duplex: Duplex, head: Buffer) => {
      // A TCP listener's connection: Node's types only say Duplex.
      const socket = duplex as Socket;
      const start = performance.now();
      socket.on('error', () => socket.destroy());
      const refuse = rawRefuser(ctx, req, socket);
      const handled = handle(ctx, { req, socket, head, start, refuse });
      ctx.drain.track('tunnel', handled);
      handled.catch((err: unknown) => {
        crashed(err, what);
        socket.destroy();
      });
    };
  server.on('connect', onRaw('CONNECT', handleConnect));
  server.on('upgrade', onRaw('upgrade', handleUpgrade));
  server.on('clientError', (err: Error & { code?: string; reason?: string }, socket: Duplex) => {
    const { status, reason } = parseErrorProblem(err);
    // A connection that went away, or that was already answered (the parser then reports the
    // close as a second error), has nobody to answer and nothing new to record.
    if (status === 0 || socket.writableEnded || socket.destroyed) {
      socket.destroy();
      return;
    }
    if (dropIfAnswered(socket)) return;
    const remote = (socket as Duplex & { remoteAddress?: string }).remoteAddress;
    const refusal = ctx.pipeline.refusal(
      { source: 'proxy', client: clientAddress(remote) },
      status,
      reason,
    );
    writeRawRefusal(socket, refusal);
  });
  return server;
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
