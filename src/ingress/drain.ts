import { Server } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

/** Handlers of each kind running at some moment (at the drain deadline: what was cut). */
export interface Running {
  /** HTTP requests on the proxy, the bridge and inside read tunnels. */
  readonly requests: number;
  /** CONNECT tunnels and upgrades. */
  readonly tunnels: number;
}

/** What a stop cut at `limits.drainTimeout`: handlers still running then, and connections. */
export interface Cut extends Running {
  readonly connections: number;
}

const EXPECTATIONS = ['request', 'checkContinue', 'checkExpectation'] as const;

/** After a cut, how long handlers get to journal their outcomes before the journal closes. */
const SETTLE_MS = 2_000;

/**
 * The drain on stop (SIGTERM). From `start` on, every response says `Connection: close` and
 * its connection closes once it is sent; idle keep-alive connections close at once, so a busy
 * keep-alive client gets one more answer, not one per request until the deadline. A response
 * whose head went out before `start` (a long download) runs on and closes its connection when
 * done. Handlers are counted while they run: a stop waits for them, cut or not, so each
 * journals its outcome before the journal closes.
 */
export class Drain {
  #draining = false;
  /** Responses begun before `start`, which may still say keep-alive. */
  readonly #open = new Set<ServerResponse>();
  readonly #closeIdle: (() => void)[] = [];
  /** Every connection of the attached servers, tunnels included (Node forgets upgraded ones). */
  readonly #sockets = new Set<Socket>();
  readonly #connected = (socket: Socket): void => {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  };
  #requests = 0;
  #tunnels = 0;
  #settled: (() => void) | null = null;
  readonly #forget: (this: ServerResponse) => void;

  constructor() {
    const open = this.#open;
    // One listener for all responses (EventEmitter passes the response as `this`).
    this.#forget = function (this: ServerResponse) {
      open.delete(this);
    };
  }

  /**
   * Follows a listener's connections, and an HTTP listener's responses (before its own
   * handlers run); the SOCKS listener has none.
   */
  attach(server: NetServer): void {
    if (server instanceof Server) this.attachInner(server, () => server.closeIdleConnections());
    server.on('connection', this.#connected);
  }

  /**
   * Follows the responses of a server that serves connections inside the listeners' (read
   * tunnels), whose idle ones `closeIdle` closes.
   */
  attachInner(server: Server, closeIdle: () => void): void {
    for (const event of EXPECTATIONS) {
      // A listener where there was none would change how Node answers an expectation.
      if (server.listenerCount(event) > 0) server.prependListener(event, this.#follow);
    }
    this.atStart(closeIdle);
  }

  /** Runs `closeIdle` when the drain starts (an inner server's idle connections close). */
  atStart(closeIdle: () => void): void {
    this.#closeIdle.push(closeIdle);
  }

  /** Counts a handler until its promise settles (it may journal an outcome until then). */
  track(kind: 'request' | 'tunnel', work: Promise<unknown>): void {
    if (kind === 'request') this.#requests++;
    else this.#tunnels++;
    const done = () => {
      if (kind === 'request') this.#requests--;
      else this.#tunnels--;
      if (this.#requests + this.#tunnels === 0) this.#settled?.();
    };
    work.then(done, done);
  }

  get running(): Running {
    return { requests: this.#requests, tunnels: this.#tunnels };
  }

  start(): void {
    this.#draining = true;
    for (const res of this.#open) closeAfter(res);
    this.#open.clear();
    for (const close of this.#closeIdle) close();
  }

  /** The drain deadline: every connection is closed; returns what was still running. */
  cut(): Cut {
    const cut = { ...this.running, connections: this.#sockets.size };
    for (const socket of this.#sockets) socket.destroy();
    return cut;
  }

  /** Resolves true once no handler runs, or false after `ms`. */
  settled(ms: number): Promise<boolean> {
    if (this.#requests + this.#tunnels === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#settled = null;
        resolve(false);
      }, ms);
      this.#settled = () => {
        clearTimeout(timer);
        this.#settled = null;
        resolve(true);
      };
    });
  }

  readonly #follow = (_req: IncomingMessage, res: ServerResponse): void => {
    if (this.#draining) {
      res.shouldKeepAlive = false;
      return;
    }
    this.#open.add(res);
    res.once('close', this.#forget);
  };
}

/** A response under way when the drain began: its connection is not reused after it. */
function closeAfter(res: ServerResponse): void {
  if (!res.headersSent) {
    // Node then writes `Connection: close` and closes the connection once the response is sent;
    // a Connection field already set (the bridge's reverse proxy sets one) would win over that.
    res.shouldKeepAlive = false;
    if (res.hasHeader('connection')) res.setHeader('connection', 'close');
    return;
  }
  const socket = res.socket;
  // Its head said keep-alive already: closed once it is done (a finished one is idle).
  if (socket !== null && !res.writableFinished) res.once('finish', () => socket.end());
}

/**
 * Waits up to `timeoutMs` for `closed` (the stopped listeners' last connection gone), then cuts
 * what remains. Either way resolves once the handlers have ended, outcomes journaled (bounded
 * by SETTLE_MS), with what was cut, or null when everything drained in time.
 */
export async function drained(
  drain: Drain,
  closed: Promise<unknown>,
  timeoutMs: number,
  log: Pick<Logger, 'warn'>,
  closeTunnels: (reason: string) => void,
): Promise<Cut | null> {
  const deadline = new AbortController();
  const inTime = await Promise.race([
    closed.then(() => true),
    sleep(timeoutMs, false, { signal: deadline.signal }).catch(() => true),
  ]);
  deadline.abort();
  let cut: Cut | null = null;
  if (!inTime) {
    // Tunnels first, so each outcome line says why it ended.
    closeTunnels(
      `cut at the drain deadline (limits.drainTimeout ${timeoutMs} ms) as the gateway stopped`,
    );
    cut = drain.cut();
    log.warn(
      `stop: ${cut.requests} request(s), ${cut.tunnels} tunnel(s) and ${cut.connections} connection(s) still open after ${timeoutMs} ms; closed`,
    );
    await closed;
  }
  if (!(await drain.settled(SETTLE_MS))) {
    const { requests, tunnels } = drain.running;
    log.warn(
      `stop: ${requests} request(s) and ${tunnels} tunnel(s) still running ${SETTLE_MS} ms after their connections closed; their outcome lines are lost`,
    );
  }
  return cut;
}
