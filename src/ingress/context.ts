import type { AgentHead } from '../http/agent-message.js';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { CaptureOptions } from '../action/capture.js';
import type { Refusal } from '../action/refusal.js';
import type { Forwarder } from '../action/forward.js';
import { authority } from '../action/forward.js';
import type { FlowRegistry } from '../action/flow-registry.js';
import { clientAddress } from './identity.js';
import type { Drain } from './drain.js';
import type { InnerHttp } from './inner-http.js';
import type { Tunnel } from './tunnel-names.js';
import type { Interceptor } from './intercept.js';
import type { Config } from '../config/load.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { Presence } from '../action/hold.js';
import type { Identity } from './identity.js';
import type { LimitLog } from '../review/limit-log.js';
import type { CredentialSet } from '../event/credential-set.js';
import type { ArmedCredential } from '../config/credential-values.js';

/** Tunnels open, in all and per session, for `limits.maxTunnels` and `tunnelsPerSession`. */
export interface OpenTunnels {
  readonly bySession: Map<string, number>;
  total: number;
}

/** What the proxy's handlers share. */
export interface ProxyContext {
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly forwarder: Forwarder;
  readonly limits: Omit<Config['limits'], 'drainTimeout' | 'keepAliveIdle'>;
  /** `network.upgrades`: the protocols an HTTP Upgrade may switch to, lower-cased. */
  readonly upgrades: readonly string[];
  readonly log: Logger;
  /** Tunnels open, for `limits.maxTunnels` and `limits.tunnelsPerSession`. */
  readonly tunnels: OpenTunnels;
  /** Counts and logs refusals at a limit. */
  readonly limitLog: LimitLog;
  /** Where and how to capture bodies; null unless `capture.bodies`. */
  readonly capture: CaptureOptions | null;
  /** TLS interception, for CONNECT targets matching `tls.intercept`; null when none. */
  readonly intercept: Interceptor | null;
  /** The server for HTTP read from inside tunnels (intercepted or read). */
  readonly inner: InnerHttp;
  /** Live flows (requests, tunnels), which follow their session's state from their judgement. */
  readonly flows: FlowRegistry;
  /** Counts running handlers; closes connections after their response once stopping. */
  readonly drain: Drain;
  /** The credentials in force: sentinels to swap on their hosts' requests, to look for in all. */
  readonly credentials: CredentialSet<ArmedCredential>;
}

/**
 * A refusal before judging (malformed, no credentials, too many tunnels), journaled, from the
 * request line and client: the caller sends it on its response or raw socket.
 */
export function earlyRefusal(
  ctx: ProxyContext,
  req: AgentHead,
  status: number,
  reason: string,
  session?: string,
): Refusal {
  return ctx.pipeline.refusal(
    {
      source: 'proxy',
      client: clientAddress(req.socket.remoteAddress),
      method: req.method ?? '',
      target: req.url ?? '',
      ...(session === undefined ? {} : { session }),
    },
    status,
    reason,
  );
}

/** RFC 9110 § 11.7.1: a 407 names the scheme the proxy accepts. */
export const PROXY_AUTHENTICATE = { 'proxy-authenticate': 'Basic realm="trajgate"' };

/**
 * Whether the client still waits, read from its socket. Nothing is attached per request (an
 * AbortController per request costs a DOMException each); a listener only while held. A class,
 * not an object literal with a getter: a literal's accessor is defined at run time, per request.
 */
class SocketPresence implements Presence {
  constructor(private readonly socket: Duplex) {}

  get gone(): boolean {
    return this.socket.destroyed;
  }

  onGone(fn: () => void): () => void {
    if (this.socket.destroyed) {
      fn();
      return () => undefined;
    }
    this.socket.once('close', fn);
    return () => this.socket.off('close', fn);
  }
}

export function presence(socket: Duplex): Presence {
  return new SocketPresence(socket);
}

/** What a held tunnel keeps of what its client sent meanwhile, before it stops reading. */
const HELD_BYTES = 64 * 1024;

/**
 * A raw socket (CONNECT) nobody reads while it is held would not notice its client leave (an
 * end of stream or a reset is only seen by reading). So while held it is read, up to
 * HELD_BYTES kept in order and given back when the hold ends.
 */
class HeldSocketPresence extends SocketPresence {
  constructor(private readonly raw: Duplex) {
    super(raw);
  }

  override onGone(fn: () => void): () => void {
    const socket = this.raw;
    if (socket.destroyed || socket.readableEnded) {
      fn();
      return () => undefined;
    }
    const kept: Buffer[] = [];
    let bytes = 0;
    const data = (chunk: Buffer) => {
      kept.push(chunk);
      if ((bytes += chunk.length) >= HELD_BYTES) socket.pause();
    };
    socket.on('data', data);
    socket.once('end', fn);
    socket.once('close', fn);
    return () => {
      socket.off('data', data);
      socket.off('end', fn);
      socket.off('close', fn);
      socket.pause();
      if (kept.length > 0) socket.unshift(Buffer.concat(kept));
    };
  }
}

export function heldPresence(socket: Duplex): Presence {
  return new HeldSocketPresence(socket);
}

/**
 * A refusal inside a tunnel trajgate reads (intercepted or read), journaled; `handshake`
 * when the agent refused the TLS handshake (its alert, or `closed`).
 */
export function tunnelRefusal(
  ctx: Pick<ProxyContext, 'pipeline'>,
  tunnel: Tunnel,
  status: number,
  reason: string,
  target?: string,
  handshake?: string,
): Refusal {
  return ctx.pipeline.refusal(
    {
      source: 'proxy',
      client: tunnel.client,
      session: tunnel.session,
      target: target ?? authority(tunnel.host, tunnel.port),
      ...(handshake === undefined ? {} : { handshake }),
      ...(tunnel.via === undefined ? {} : { via: tunnel.via }),
    },
    status,
    reason,
  );
}
