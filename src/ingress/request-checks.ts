import type { IncomingMessage } from 'node:http';
import { hostFieldProblem } from '../action/headers.js';
import type { ProxyContext } from './context.js';
import { PROXY_AUTHENTICATE } from './context.js';
import { clientAddress } from './identity.js';

const ABSOLUTE = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

const HTTP: ReadonlySet<string> = new Set(['http:']);

/** A request the proxy may judge, with its agent; or the refusal it gets instead. */
export type Checked =
  | { readonly ok: true; readonly url: URL; readonly session: string; readonly client: string }
  | {
      readonly ok: false;
      readonly status: number;
      readonly reason: string;
      readonly headers?: Record<string, string>;
    };

/**
 * What every absolute-form request passes before it is judged, plain or Upgrade, in one place
 * so that neither can skip a check: the target's form and scheme, no userinfo, exactly one
 * Host, no transfer coding that would go on undecoded, and the agent's credentials. `schemes`
 * lets an upgrade name `ws:` as well (same default port, sent upstream in origin-form).
 */
export function checkRequest(
  ctx: ProxyContext,
  req: IncomingMessage,
  schemes: ReadonlySet<string> = HTTP,
): Checked {
  const target = req.url ?? '';
  const refuse = (status: number, reason: string): Checked => ({ ok: false, status, reason });
  if (!ABSOLUTE.test(target)) {
    return refuse(
      400,
      'this is a forward proxy: send absolute-form requests (set HTTP_PROXY), not origin-form',
    );
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return refuse(400, `invalid request URL ${JSON.stringify(target.slice(0, 200))}`);
  }
  if (!schemes.has(url.protocol)) {
    return refuse(
      400,
      `scheme ${url.protocol} cannot be proxied as plain HTTP: use CONNECT (HTTPS_PROXY)`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    return refuse(400, 'credentials in the request URL are not allowed (RFC 9110 § 4.2.4)');
  }
  const hostProblem = hostFieldProblem(req.rawHeaders, req.httpVersion === '1.1');
  if (hostProblem) return refuse(400, hostProblem);
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked') {
    // RFC 9112 § 6.1: a coding we would have to pass on undecoded is refused, not guessed at.
    return refuse(501, `transfer coding ${JSON.stringify(te)} is not supported (only chunked)`);
  }
  const client = clientAddress(req.socket.remoteAddress);
  const who = ctx.identity.fromProxyAuthorization(req.headers['proxy-authorization'], client);
  if (!who.ok) return { ok: false, status: 407, reason: who.reason, headers: PROXY_AUTHENTICATE };
  return { ok: true, url, session: who.session, client };
}
