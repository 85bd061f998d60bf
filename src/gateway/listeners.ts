import type { AddressInfo, Server } from 'node:net';
import type { Logger } from 'pino';
import type { HostPort } from '../config/formats.js';
import { formatHostPort } from '../config/formats.js';
import type { Cut } from '../ingress/drain.js';
import { Drain, drained } from '../ingress/drain.js';
import { osError } from '../os-error.js';
import type { LimitLog } from '../review/limit-log.js';

export type ListenerName = 'proxy' | 'bridge' | 'admin' | 'socks';

/** What a stop does besides closing the listeners, while their requests drain. */
export interface DrainSteps {
  readonly log: Pick<Logger, 'warn'>;
  /** `limits.drainTimeout` as it is when the stop begins. */
  drainTimeout(): number;
  /** Answers every held request (its session stays paused). */
  releaseHeld(): void;
  /** Closes the live tunnels at the drain deadline, each journaled with `reason`. */
  closeTunnels(reason: string): void;
}

/**
 * The proxy, bridge, admin (and SOCKS, when set) listeners: served in that order, and drained together on stop
 * (see Drain) — which also closes any of them that listened before a start failed.
 */
export class Listeners {
  readonly drain = new Drain();
  readonly #servers = new Map<ListenerName, Server>();
  readonly #at = new Map<ListenerName, HostPort>();
  #cut: Cut | null = null;

  constructor(
    private readonly steps: DrainSteps,
    private readonly limits: Pick<LimitLog, 'acceptFailed'>,
  ) {}

  /**
   * Takes `server` to listen as `name`; the drain follows its responses from now on. Once it
   * listens, an error it emits is a connection it could not accept (EMFILE, ENFILE: at the file
   * limit libuv closes such a connection itself, and says so only when it cannot); it goes on
   * accepting, and the log and a metric say so. The proxy's cap refuses first (connection-cap).
   */
  add(name: ListenerName, server: Server): void {
    this.drain.attach(server);
    this.#servers.set(name, server);
    server.on('error', (err: NodeJS.ErrnoException) => {
      if (this.#at.has(name)) this.limits.acceptFailed(`listen.${name}`, err);
    });
  }

  /** Listens on each address in turn; the first that cannot throws E_LISTEN naming its key. */
  async listen(at: { readonly [name in ListenerName]?: HostPort }): Promise<void> {
    for (const [name, server] of this.#servers) {
      const address = at[name];
      if (address === undefined) throw new Error(`listen.${name} is not configured`);
      this.#at.set(name, await listen(server, address, `listen.${name}`));
    }
  }

  /** Where `name` listens (the real port when the config said 0). */
  address(name: ListenerName): HostPort {
    const at = this.#at.get(name);
    if (at === undefined) throw new Error(`listen.${name} is not listening yet`);
    return at;
  }

  /** What the last close cut at the drain deadline; null when everything drained. */
  get cut(): Cut | null {
    return this.#cut;
  }

  /**
   * Stops accepting and drains: in-flight requests finish up to `limits.drainTimeout`, then
   * what remains is cut.
   */
  async close(): Promise<void> {
    const { steps } = this;
    this.drain.start();
    const closed = Promise.all(
      [...this.#servers.values()].map(
        (server) => new Promise<void>((resolve) => server.close(() => resolve())),
      ),
    );
    steps.releaseHeld();
    const timeout = steps.drainTimeout();
    this.#cut = await drained(this.drain, closed, timeout, steps.log, (reason) =>
      steps.closeTunnels(reason),
    );
  }
}

function listen(server: Server, at: HostPort, key: string): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => {
      const privileged = `ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port of 1024 or more in ${key}`;
      const path = formatHostPort(at);
      reject(
        osError('E_LISTEN', err, { op: 'listen on', path, key, fixes: { EACCES: privileged } }),
      );
    };
    server.once('error', failed);
    server.listen(at.port, at.host, () => {
      server.off('error', failed);
      const address = server.address() as AddressInfo;
      resolve({ host: at.host, port: address.port });
    });
  });
}
