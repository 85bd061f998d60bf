import type { Http2ServerRequest } from 'node:http2';
import type { IncomingMessage } from 'node:http';
import type { Tunnel } from './tunnel-names.js';
import { requestProblem } from './request-rules.js';
import { DEFAULT_PORT, hostOf, safeUrl, tunnelHost, tunnelOrigin } from './tunnel-names.js';

/** A stream's request, checked: its URL, or why it is refused and the target it named. */
export type H2Checked =
  | { readonly ok: true; readonly url: URL }
  | {
      readonly ok: false;
      readonly status: number;
      readonly reason: string;
      readonly target: string;
    };

/**
 * The pseudo-header rules of RFC 9113 § 8.3 that nghttp2 leaves to the server, and the names
 * the tunnel was opened for: `:scheme` is the tunnel's, `:authority` (or Host) names the
 * CONNECT host and port (else 421, as for HTTP/1.1 inside a tunnel, RFC 9110 § 15.5.20), a
 * Host beside `:authority` agrees with it (§ 8.3.1), and neither carries userinfo. Lower-case
 * names, connection-specific fields and the pseudo-headers' presence are nghttp2's (§ 8.2).
 * Then every rule a request passes on any path (requestProblem).
 */
export function h2RequestProblem(req: Http2ServerRequest, tunnel: Tunnel): H2Checked {
  const origin = tunnelOrigin(tunnel);
  const headers = req.headers;
  const authority = headers[':authority'];
  const hosts = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i] === 'host');
  const host = headers.host;
  const path = headers[':path'] ?? '';
  const named = authority ?? (typeof host === 'string' ? host : '');
  // As an HTTP/1.1 request's target is journaled: the path as the agent wrote it.
  const target = path;
  const refuse = (status: number, reason: string): H2Checked => ({
    ok: false,
    status,
    reason,
    target,
  });
  if (headers[':scheme'] !== tunnel.scheme)
    return refuse(
      400,
      `:scheme ${JSON.stringify(headers[':scheme'] ?? '')} inside TLS (RFC 9113 § 8.3.1)`,
    );
  if (hosts.length > 1) return refuse(400, 'more than one Host field');
  if (authority !== undefined && host !== undefined && host !== authority)
    return refuse(
      400,
      `Host ${JSON.stringify(host)} disagrees with :authority ${JSON.stringify(authority)} (RFC 9113 § 8.3.1)`,
    );
  if (named === '') return refuse(400, 'no :authority and no Host field (RFC 9113 § 8.3.1)');
  if (named.includes('@'))
    return refuse(400, ':authority must not carry userinfo (RFC 9113 § 8.3.1)');
  if (!path.startsWith('/') && !(path === '*' && req.method === 'OPTIONS'))
    return refuse(
      400,
      `:path ${JSON.stringify(path.slice(0, 200))} is not a path (RFC 9113 § 8.3.1)`,
    );
  const url = safeUrl(origin + (path === '*' ? '/' : path));
  if (
    url === null ||
    url.origin !== origin ||
    hostOf(named, DEFAULT_PORT[tunnel.scheme]) !== `${tunnel.host}:${tunnel.port}`
  ) {
    const reason = `:authority ${JSON.stringify(named.slice(0, 200))} and :path ${JSON.stringify(path.slice(0, 200))} do not match the tunnel to ${tunnelHost(tunnel)}:${tunnel.port}`;
    return refuse(421, reason);
  }
  const problem = requestProblem(req as unknown as IncomingMessage, url, false);
  if (problem !== null) return refuse(problem.status, problem.reason);
  return { ok: true, url };
}
