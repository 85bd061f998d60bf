import { dirname, join } from 'node:path';
import type { CaptureOptions } from '../action/capture.js';
import type { Egress } from '../action/egress.js';
import { Forwarder } from '../action/forward.js';
import { upstreamTrust } from '../action/trust.js';
import type { Config } from '../config/load.js';
import type { InnerHttp, Tunnel } from './inner-http.js';
import { Interceptor } from './intercept.js';

/** A refusal inside a tunnel; `handshake`: how the agent refused TLS (ingress/intercept.ts). */
type Refuse = (tunnel: Tunnel, status: number, reason: string, handshake?: string) => void;

/** Parts built for a new config before a reload's swap: installed by it, or dropped unused. */
export interface Rebuilt {
  install(): void;
  discard(): void;
}

/**
 * The proxy's parts that a config reload replaces rather than changes in place: the
 * forwarder's connection pools (timeouts and trusted CAs are fixed per pool), the TLS
 * interceptor (its list of hosts), and where captures go. Handlers read them at each request.
 */
export class ProxyParts {
  #forwarder: Forwarder;
  #intercept: Interceptor | null;
  #capture: CaptureOptions | null;

  private constructor(
    private readonly egress: Egress,
    private readonly inner: InnerHttp,
    private readonly refuse: Refuse,
    forwarder: Forwarder,
    intercept: Interceptor | null,
    capture: CaptureOptions | null,
  ) {
    this.#forwarder = forwarder;
    this.#intercept = intercept;
    this.#capture = capture;
  }

  static async build(
    config: Config,
    egress: Egress,
    inner: InnerHttp,
    refuse: Refuse,
  ): Promise<ProxyParts> {
    return new ProxyParts(
      egress,
      inner,
      refuse,
      forwarder(config, egress),
      await interceptor(config, inner, refuse),
      captureOptions(config),
    );
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

  /** Builds what `next` changes (a CA that cannot be loaded throws, changing nothing). */
  async rebuild(next: Config, running: Config): Promise<Rebuilt> {
    const same = (read: (c: Config) => unknown) =>
      JSON.stringify(read(next)) === JSON.stringify(read(running));
    const pool = same((c) => [c.limits, c.tls.upstreamCa])
      ? this.#forwarder
      : forwarder(next, this.egress);
    const tls = same((c) => c.tls.intercept)
      ? this.#intercept
      : await interceptor(next, this.inner, this.refuse);
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

  close(): Promise<void> {
    return this.#forwarder.close();
  }
}

function forwarder(config: Config, egress: Egress): Forwarder {
  return new Forwarder(config.limits, egress, upstreamTrust(config.tls.upstreamCa));
}

/** TLS interception with the local CA (`trajgate ca init`); its code loads only when configured. */
async function interceptor(
  config: Config,
  inner: InnerHttp,
  refuse: Refuse,
): Promise<Interceptor | null> {
  if (config.tls.intercept.length === 0) return null;
  const { loadCa } = await import('../tls/ca.js');
  const { LeafCache } = await import('../tls/leaves.js');
  return new Interceptor(config, new LeafCache(loadCa(config.tls.ca)), inner, refuse);
}

/** Where captured bodies go, beside the journal; null unless `capture.bodies`. */
function captureOptions(config: Config): CaptureOptions | null {
  if (!config.capture.bodies) return null;
  const { maxBytes, redact } = config.capture;
  return { dir: join(dirname(config.journal.path), 'captures'), maxBytes, redact };
}
