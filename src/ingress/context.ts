import type { Logger } from 'pino';
import type { Forwarder } from '../action/forward.js';
import type { Config } from '../config/load.js';
import type { Pipeline } from '../pipeline.js';
import type { Identity } from './identity.js';

/** What the proxy's handlers share. */
export interface ProxyContext {
  readonly pipeline: Pipeline;
  readonly identity: Identity;
  readonly forwarder: Forwarder;
  readonly limits: Config['limits'];
  readonly log: Logger;
  /** Open tunnels per session, for `limits.tunnelsPerSession`. */
  readonly tunnels: Map<string, number>;
}

/** RFC 9110 § 11.7.1: a 407 names the scheme the proxy accepts. */
export const PROXY_AUTHENTICATE = { 'proxy-authenticate': 'Basic realm="trajgate"' };

/** An AbortSignal that fires when the client's connection closes before we are done. */
export function clientGone(socket: { once(event: 'close', fn: () => void): unknown }): AbortSignal {
  const abort = new AbortController();
  socket.once('close', () => abort.abort());
  return abort.signal;
}
