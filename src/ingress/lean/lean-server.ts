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
  const open = new Set<LeanConnection>();
  let draining = false;
  const clock = new LeanClock(ctx.limits.headerTimeout);
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
    const connection = new LeanConnection(socket, settings(), handlers);
    open.add(connection);
    socket.once('close', () => open.delete(connection));
  });
  capProxyConnections(server, ctx);
  ctx.drain.atStart(() => {
    draining = true;
    for (const connection of open) connection.closeIfIdle();
  });
  return server;
}
