import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { Refusal } from '../action/refusal.js';
import { sendRefusal, writeRawRefusal } from '../action/respond.js';
import type { AgentAnswer, AgentHead, AgentRequest } from '../http/agent-message.js';
import type { Drain } from './drain.js';
import type { ProxyHandlers } from './engine-handlers.js';
import { refuseParseError } from './engine-handlers.js';
import type { RawRefuser, RawRequest } from './raw-request.js';
import type { Problem } from './request-rules.js';
import { CLOSE, requestProblem } from './request-rules.js';
import type { Tunnel } from './tunnel-names.js';
import { DEFAULT_PORT, hostOf, safeUrl, tunnelHost, tunnelOrigin } from './tunnel-names.js';

export interface InnerHooks {
  /** Judges and serves one inner request, as a plain HTTP one with its full URL. */
  serve(req: AgentRequest, res: AgentAnswer, url: URL, tunnel: Tunnel): Promise<void>;
  /**
   * Judges and serves one inner Upgrade (its checks passed) as a request to `url`: the
   * connection is the upgrade's from here on.
   */
  upgrade(raw: RawRequest, url: URL, tunnel: Tunnel): Promise<void>;
  /** Journals a refusal (bad request, Host mismatch) and returns what to answer. */
  refuse(tunnel: Tunnel, status: number, reason: string, target?: string): Refusal;
}

/**
 * What either HTTP/1.1 engine inside `tunnel` calls for what it read (inner-http.ts: node:http,
 * lean/lean-inner.ts: LeanConnection), so both judge, serve and refuse alike. Names must agree
 * with the tunnel: an inner Host or absolute-form target other than the CONNECT authority is
 * answered 421 (RFC 9110 § 15.5.20), so no request is judged as one host and sent to another.
 * Every other rule is requestProblem's, the listener's own: no path into judgement skips one.
 */
export function tunnelHandlers(tunnel: Tunnel, hooks: InnerHooks, drain: Drain): ProxyHandlers {
  const request = (req: AgentRequest, res: AgentAnswer): void => {
    const checked = checkInner(req, tunnel);
    if (!('url' in checked)) {
      const refusal = hooks.refuse(tunnel, checked.status, checked.reason, req.url ?? '/');
      return sendRefusal(res, refusal, checked.headers);
    }
    const served = hooks.serve(req, res, checked.url, tunnel);
    drain.track('request', served);
    served.catch(() => res.destroy());
  };
  const raw = (kind: 'connect' | 'upgrade', req: AgentHead, socket: Socket, head: Buffer) => {
    if (kind === 'connect') {
      // A tunnel within a tunnel would hide its requests again.
      const why = `CONNECT${where(tunnel)} is not allowed: send requests, not another tunnel`;
      return writeRawRefusal(socket, hooks.refuse(tunnel, 405, why, req.url ?? ''));
    }
    const start = performance.now();
    const target = req.url ?? '/';
    // A raw refusal always closes (its session is the tunnel's).
    const refuse: RawRefuser = (status, reason) =>
      writeRawRefusal(socket, hooks.refuse(tunnel, status, reason, target));
    const checked = checkInner(req, tunnel);
    if (!('url' in checked)) return refuse(checked.status, checked.reason);
    const served = hooks.upgrade({ req, socket, head, start, refuse }, checked.url, tunnel);
    drain.track('tunnel', served);
    served.catch(() => socket.destroy());
  };
  const clientError = (err: Error & { code?: string; reason?: string }, socket: Duplex) =>
    refuseParseError(err, socket, where(tunnel), (p) => hooks.refuse(tunnel, p.status, p.reason));
  return { request, raw, clientError };
}

/** The URL an inner request is judged as, or why it is refused. */
function checkInner(
  req: AgentHead,
  tunnel: Tunnel,
): { readonly url: URL } | (Problem & { readonly headers?: Record<string, string> }) {
  const authority = tunnelHost(tunnel);
  const defaultPort = DEFAULT_PORT[tunnel.scheme];
  const origin = tunnelOrigin(tunnel);
  const target = req.url ?? '/';
  const url = target.startsWith('/') ? safeUrl(origin + target) : safeUrl(target);
  // The same rules as on the listener, word for word; Host is required whatever the version,
  // as it is checked against the tunnel.
  const problem = url === null ? null : requestProblem(req, url, true);
  if (problem !== null) return { ...problem, headers: CLOSE };
  const host = hostOf(req.headers.host, defaultPort);
  if (url === null || url.origin !== origin || host !== `${tunnel.host}:${tunnel.port}`) {
    const reason = `Host ${JSON.stringify(req.headers.host ?? '')} and target ${JSON.stringify(target.slice(0, 200))} do not match the tunnel to ${authority}:${tunnel.port}`;
    return { status: 421, reason };
  }
  return { url };
}

function where(tunnel: Tunnel): string {
  return tunnel.scheme === 'https' ? ' inside TLS' : ' inside a CONNECT tunnel';
}
