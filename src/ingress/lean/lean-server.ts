import { createServer } from 'node:net';
import type { Server } from 'node:net';
import type { ProxyContext } from '../context.js';
import { capProxyConnections, proxyHandlers } from '../proxy.js';
import { LeanConnection } from './connection.js';
import { LeanClock } from './lean-clock.js';

/**
 * The proxy listener on the lean engine (`engine: lean`): a plain TCP server whose connections
 * are read by LeanConnection and served by the same handlers as the node:http listener
 * (proxy.ts), with the same connection cap. `keepAliveIdle` is read at each answer, so a reload
 * applies from the next one; the head limits (`headerBytes`, `headerTimeout`) are read at each
 * accept. At the drain (SIGTERM) idle connections close and answers say `Connection: close`.
 */
export function createLeanProxyServer(ctx: ProxyContext, keepAliveIdle: () => number): Server {
  const handlers = proxyHandlers(ctx);
  let draining = false;
  const clock = new LeanClock<LeanConnection>(ctx.limits.headerTimeout);
  const settings = () => ({
    headerBytes: ctx.limits.headerBytes,
    headerTimeout: ctx.limits.headerTimeout,
    clock,
    keepAliveIdle,
    draining: () => draining,
    readsAhead: false,
  });
  // As node:http's: half-open so an answer still goes to a client that ended its side.
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    // It keeps itself in the clock while its socket is open (the drain walks the clock).
    new LeanConnection(socket, settings(), handlers);
  });
  capProxyConnections(server, ctx);
  ctx.drain.atStart(() => {
    draining = true;
    for (const connection of clock) connection.closeIfIdle();
  });
  return server;
}
