import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { CaptureOptions } from '../action/capture.js';
import type { Egress } from '../action/egress.js';
import type { FlowRegistry } from '../action/flow-registry.js';
import { authority, Forwarder } from '../action/forward.js';
import { upstreamTrust } from '../action/trust.js';
import type { Config } from '../config/load.js';
import type { Part, Shape, Slice } from '../config/parts.js';
import { built, part, pick, replaced } from '../config/parts.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { OpenTunnels, ProxyContext } from './context.js';
import { tunnelRefusal } from './context.js';
import type { Drain } from './drain.js';
import { serveHttp } from './http.js';
import type { Identity } from './identity.js';
import type { InnerHooks } from './inner-handlers.js';
import type { Tunnel } from './tunnel-names.js';
import type { InnerHttp } from './inner-http.js';
import { createInnerHttp } from './inner-http.js';
import { InnerH2 } from './inner-h2.js';
import { Interceptor } from './intercept.js';
import { serveUpgrade } from './upgrade.js';
import type { LimitLog } from '../review/limit-log.js';
import type { CredentialSet } from '../event/credential-set.js';
import type { ArmedCredential } from '../config/credential-values.js';
import type { CredentialsInForce } from '../event/credential-set.js';

/** What the handlers read at each request. */
const HANDLERS = {
  limits: [
    'headerBytes',
    'headerTimeout',
    'upstreamTimeout',
    'bodyTimeout',
    'connectTimeout',
    'tunnelIdle',
    'tunnelsPerSession',
    'maxTunnels',
    'maxConnections',
    'scanBodyBytes',
  ],
  network: ['upgrades'],
} as const satisfies Shape;

/** The forwarder's connection pools: their timeouts, trusted CAs and engine are fixed per pool. */
const POOLS = {
  limits: ['upstreamTimeout', 'bodyTimeout', 'connectTimeout'],
  tls: ['upstreamCa'],
  engine: true,
} as const satisfies Shape;

/** TLS interception: the hosts, the CA that signs their leaves, the handshake's time. */
const INTERCEPT = { tls: ['intercept', 'ca'], limits: ['headerTimeout'] } as const satisfies Shape;

/** Body captures, kept beside the journal. */
const CAPTURE = {
  capture: ['bodies', 'maxBytes', 'redact'],
  journal: ['path'],
} as const satisfies Shape;

/** What the proxy's handlers are built on. */
export interface ProxyDeps {
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly egress: Egress;
  readonly flows: FlowRegistry;
  readonly drain: Drain;
  readonly log: Logger;
  readonly limitLog: LimitLog;
  readonly credentials: CredentialsInForce<ArmedCredential>;
  /** The agent refused the TLS handshake of an intercepted tunnel (`how`: its alert). */
  handshakeRefused(tunnel: Tunnel, how: string, reason: string): void;
}

/**
 * What the proxy's handlers share (ProxyContext), each piece configuring itself from its slice
 * of the config (parts()): the limits and upgrades read at each request, the forwarder's pools
 * and the TLS interceptor (rebuilt when theirs changes), where captures go. Requests read from
 * inside tunnels are served like absolute-form ones (InnerHttp).
 */
export class ProxyParts implements ProxyContext {
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly log: Logger;
  readonly flows: FlowRegistry;
  readonly drain: Drain;
  readonly inner: InnerHttp;
  readonly innerH2: InnerH2;
  readonly tunnels: OpenTunnels = { bySession: new Map(), total: 0 };
  readonly limitLog: LimitLog;
  readonly #deps: ProxyDeps;
  readonly #handlers: Slice<typeof HANDLERS>;
  #forwarder: Forwarder;
  #intercept: Interceptor | null = null;
  #capture: CaptureOptions | null;

  constructor(deps: ProxyDeps, config: Config) {
    this.#deps = deps;
    ({ pipeline: this.pipeline, identity: this.identity, log: this.log } = deps);
    ({ flows: this.flows, drain: this.drain, limitLog: this.limitLog } = deps);
    this.#handlers = pick(config, HANDLERS);
    const inner: InnerHooks = {
      serve: (req, res, url, tunnel) =>
        serveHttp(this, req, res, url, url.href, who(tunnel), performance.now()),
      upgrade: (raw, url, tunnel) => serveUpgrade(this, raw, who(tunnel), url, url.href),
      refuse: (tunnel, status, reason, target) =>
        tunnelRefusal(this, tunnel, status, reason, target),
    };
    this.inner = createInnerHttp(config, deps.drain, inner);
    this.innerH2 = new InnerH2(config, deps.drain, inner);
    this.#forwarder = forwarder(pick(config, POOLS), deps.egress);
    this.#capture = captureOptions(pick(config, CAPTURE));
  }

  /** Loads the TLS interceptor when `tls.intercept` lists anything (its CA is read now). */
  async intercepting(config: Config): Promise<void> {
    this.#intercept = await this.#interceptor(pick(config, INTERCEPT));
  }

  /** Its pieces as parts of the gateway's config (gateway/config-parts.ts). */
  parts(): Part[] {
    return [
      part({
        name: 'proxy handlers',
        reads: HANDLERS,
        configure: (next) => replaced(this.#handlers, next),
      }),
      part({
        name: 'forwarder pools',
        reads: POOLS,
        configure: (next) =>
          built(
            () => forwarder(next, this.#deps.egress),
            (pool) => {
              // The old pools close once their requests finish (undici's Agent.close).
              void this.#forwarder.close();
              this.#forwarder = pool;
            },
            (pool) => void pool.close(),
          ),
      }),
      part({
        name: 'TLS interceptor',
        reads: INTERCEPT,
        configure: (next) =>
          built(
            () => this.#interceptor(next),
            (tls) => void (this.#intercept = tls),
          ),
      }),
      part({
        name: 'captures',
        reads: CAPTURE,
        configure: (next) => ({ install: () => void (this.#capture = captureOptions(next)) }),
      }),
    ];
  }

  /** The credentials in force now (an operator's revoke and a reload replace them). */
  get credentials(): CredentialSet<ArmedCredential> {
    return this.#deps.credentials.current;
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

  get limits(): Slice<typeof HANDLERS>['limits'] {
    return this.#handlers.limits;
  }

  get upgrades(): readonly string[] {
    return this.#handlers.network.upgrades;
  }

  async close(): Promise<void> {
    this.inner.close();
    this.innerH2.close();
    await this.#forwarder.close();
  }

  /** TLS interception with the local CA (`trajgate ca init`); its code loads only when configured. */
  async #interceptor(config: Slice<typeof INTERCEPT>): Promise<Interceptor | null> {
    if (config.tls.intercept.length === 0) return null;
    const { loadCa } = await import('../tls/ca.js');
    const { LeafCache } = await import('../tls/leaves.js');
    const leaves = new LeafCache(loadCa(config.tls.ca));
    return new Interceptor(
      config,
      leaves,
      this.inner,
      this.innerH2,
      (tunnel, status, reason, how) => {
        const target = authority(tunnel.host, tunnel.port);
        if (how !== undefined) this.#deps.handshakeRefused(tunnel, how, reason);
        tunnelRefusal(this, tunnel, status, reason, target, how);
      },
    );
  }
}

const who = (tunnel: Tunnel) => ({ session: tunnel.session, client: tunnel.client });

function forwarder(config: Slice<typeof POOLS>, egress: Egress): Forwarder {
  const trust = upstreamTrust(config.tls.upstreamCa);
  return new Forwarder(config.limits, egress, trust, { engine: config.engine });
}

/** Where captured bodies go, beside the journal; null unless `capture.bodies`. */
function captureOptions(config: Slice<typeof CAPTURE>): CaptureOptions | null {
  if (!config.capture.bodies) return null;
  const { maxBytes, redact } = config.capture;
  return { dir: join(dirname(config.journal.path), 'captures'), maxBytes, redact };
}
