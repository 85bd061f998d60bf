import type { Socket } from 'node:net';
import type { Drain } from '../drain.js';
import type { InnerHooks } from '../inner-handlers.js';
import { tunnelHandlers } from '../inner-handlers.js';
import type { InnerHttp, InnerLimits } from '../inner-http.js';
import type { Tunnel } from '../tunnel-names.js';
import { LeanConnection } from './connection.js';
import type { LeanSettings } from './connection.js';
import { LeanClock } from './lean-clock.js';

/**
 * Requests inside read and intercepted tunnels on the lean engine (`engine: lean`): one
 * LeanConnection per tunnel served, with the tunnel's handlers (inner-handlers.ts), so every
 * HTTP/1.1 request trajgate judges is read by the one engine. As on node:http's inner server:
 * the head limits are the config's at start, the head clock starts when the tunnel is served,
 * a reload's `keepAliveIdle` applies from the next answer, and at the drain answers say
 * `Connection: close` and connections idle between requests close. One that has read no
 * request yet stays open: the tunnel was opened for one, which may be on its way.
 */
export class LeanInner implements InnerHttp {
  readonly #hooks: InnerHooks;
  readonly #drain: Drain;
  readonly #open: LeanClock<LeanConnection>;
  readonly #settings: Omit<LeanSettings, 'readsAhead'>;
  #keepAliveIdle: number;
  #draining = false;

  constructor(limits: InnerLimits, drain: Drain, hooks: InnerHooks) {
    this.#hooks = hooks;
    this.#drain = drain;
    this.#keepAliveIdle = limits.keepAliveIdle;
    this.#open = new LeanClock(limits.headerTimeout);
    this.#settings = {
      headerBytes: limits.headerBytes,
      headerTimeout: limits.headerTimeout,
      clock: this.#open,
      keepAliveIdle: () => this.#keepAliveIdle,
      draining: () => this.#draining,
    };
    drain.atStart(() => {
      this.#draining = true;
      for (const connection of this.#open) if (!connection.fresh) connection.closeIfIdle();
    });
  }

  serve(socket: Socket, tunnel: Tunnel): void {
    const handlers = tunnelHandlers(tunnel, this.#hooks, this.#drain);
    // Under `engine: node` a read tunnel's socket is one node:http's listener handed over,
    // intercepted TLS a socket of its own.
    const settings = { ...this.#settings, readsAhead: tunnel.scheme === 'http' };
    // It keeps itself in the clock while its socket is open (the drain walks the clock).
    new LeanConnection(socket, settings, handlers);
  }

  keepAlive(ms: number): void {
    this.#keepAliveIdle = ms;
  }

  close(): void {
    for (const connection of this.#open) connection.close();
  }
}
