import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { CaptureOptions } from '../action/capture.js';
import type { Egress } from '../action/egress.js';
import type { FlowRegistry } from '../action/flow-registry.js';
import { authority, Forwarder } from '../action/forward.js';
import { upstreamTrust } from '../action/trust.js';
import type { Config } from '../config/load.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { ProxyContext } from './context.js';
import { tunnelRefusal } from './context.js';
import type { Drain } from './drain.js';
import { serveHttp } from './http.js';
import type { Identity } from './identity.js';
import type { Tunnel } from './inner-http.js';
import { InnerHttp } from './inner-http.js';
import { Interceptor } from './intercept.js';

/** What the proxy's handlers are built on. */
export interface ProxyDeps {
  readonly config: Config;
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly egress: Egress;
  readonly flows: FlowRegistry;
  readonly drain: Drain;
  readonly log: Logger;
  /** The agent refused the TLS handshake of an intercepted tunnel (`how`: its alert). */
  handshakeRefused(tunnel: Tunnel, how: string, reason: string): void;
}

/** Parts built for a new config before a reload's swap: installed by it, or dropped unused. */
export interface Rebuilt {
  install(): void;
  discard(): void;
}

/**
 * What the proxy's handlers share (ProxyContext), with the parts a config reload replaces
 * rather than changes in place: the forwarder's connection pools (timeouts and trusted CAs are
 * fixed per pool), the TLS interceptor (its list of hosts), and where captures go. Handlers
 * read them at each request. Requests read from inside tunnels are served like absolute-form
 * ones (InnerHttp).
 */
export class ProxyParts implements ProxyContext {
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly log: Logger;
  readonly flows: FlowRegistry;
  readonly drain: Drain;
  readonly inner: InnerHttp;
  readonly tunnels = new Map<string, number>();
  readonly #deps: ProxyDeps;
  #forwarder: Forwarder;
  #intercept: Interceptor | null = null;
  #capture: CaptureOptions | null;

  constructor(deps: ProxyDeps) {
    this.#deps = deps;
    ({ pipeline: this.pipeline, identity: this.identity, log: this.log } = deps);
    ({ flows: this.flows, drain: this.drain } = deps);
    this.inner = new InnerHttp(deps.config, deps.drain, {
      serve: (req, res, url, tunnel) =>
        serveHttp(this, req, res, url, url.href, who(tunnel), performance.now()),
      refuse: (tunnel, status, reason, target) =>
        tunnelRefusal(this, tunnel, status, reason, target),
    });
    this.#forwarder = forwarder(deps.config, deps.egress);
    this.#capture = captureOptions(deps.config);
  }

  /** Loads the TLS interceptor when `tls.intercept` lists anything (its CA is read now). */
  async intercepting(): Promise<void> {
    this.#intercept = await this.#interceptor(this.#deps.config);
  }

  get forwarder(): Forwarder {
    return this.#forwarder;
  }

  get intercept(): Interceptor | null {
    return this.#intercept;
  }

  get capture(): CaptureOptions | null {
    return this.#capture;
  }

  get limits(): Config['limits'] {
    return this.#deps.config.limits;
  }

  get upgrades(): readonly string[] {
    return this.#deps.config.network.upgrades;
  }

  /** Builds what `next` changes (a CA that cannot be loaded throws, changing nothing). */
  async rebuild(next: Config, running: Config): Promise<Rebuilt> {
    const same = (read: (c: Config) => unknown) =>
      JSON.stringify(read(next)) === JSON.stringify(read(running));
    const pool = same((c) => [c.limits, c.tls.upstreamCa])
      ? this.#forwarder
      : forwarder(next, this.#deps.egress);
    const tls = same((c) => c.tls.intercept) ? this.#intercept : await this.#interceptor(next);
    return {
      install: () => {
        // The old pools close once their requests finish (undici's Agent.close).
        if (pool !== this.#forwarder) void this.#forwarder.close();
        this.#forwarder = pool;
        this.#intercept = tls;
        this.#capture = captureOptions(next);
      },
      discard: () => {
        if (pool !== this.#forwarder) void pool.close();
      },
    };
  }

  async close(): Promise<void> {
    this.inner.close();
    await this.#forwarder.close();
  }

  /** TLS interception with the local CA (`trajgate ca init`); its code loads only when configured. */
  async #interceptor(config: Config): Promise<Interceptor | null> {
    if (config.tls.intercept.length === 0) return null;
    const { loadCa } = await import('../tls/ca.js');
    const { LeafCache } = await import('../tls/leaves.js');
    const leaves = new LeafCache(loadCa(config.tls.ca));
    return new Interceptor(config, leaves, this.inner, (tunnel, status, reason, how) => {
      const target = authority(tunnel.host, tunnel.port);
      if (how !== undefined) this.#deps.handshakeRefused(tunnel, how, reason);
      tunnelRefusal(this, tunnel, status, reason, target, how);
    });
  }
}

const who = (tunnel: Tunnel) => ({ session: tunnel.session, client: tunnel.client });

function forwarder(config: Config, egress: Egress): Forwarder {
  return new Forwarder(config.limits, egress, upstreamTrust(config.tls.upstreamCa));
}

/** Where captured bodies go, beside the journal; null unless `capture.bodies`. */
function captureOptions(config: Config): CaptureOptions | null {
  if (!config.capture.bodies) return null;
  const { maxBytes, redact } = config.capture;
  return { dir: join(dirname(config.journal.path), 'captures'), maxBytes, redact };
}
