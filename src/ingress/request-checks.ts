import type { AgentHead } from '../http/agent-message.js';
import type { ProxyContext } from './context.js';
import { PROXY_AUTHENTICATE } from './context.js';
import { clientAddress } from './identity.js';
import { CLOSE, requestProblem } from './request-rules.js';

const ABSOLUTE = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

const HTTP: ReadonlySet<string> = new Set(['http:']);

/** A request the proxy may judge, with its agent; or the refusal it gets instead. */
export type Checked =
  | { readonly ok: true; readonly url: URL; readonly session: string; readonly client: string }
  | {
      readonly ok: false;
      readonly status: number;
      readonly reason: string;
      /** The agent, once its credentials were checked. */
      readonly session?: string;
      readonly headers?: Record<string, string>;
    };

/**
 * What an absolute-form request on the proxy listener passes before it is judged, plain or
 * Upgrade: the target's form and scheme and the agent's credentials, then every rule a
 * request read anywhere passes (requestProblem). `schemes` lets an upgrade name `ws:` as well
 * (same default port, sent upstream in origin-form).
 */
export function checkRequest(
  ctx: ProxyContext,
  req: AgentHead,
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
  const client = clientAddress(req.socket.remoteAddress);
  const who = ctx.identity.fromProxyAuthorization(req.headers['proxy-authorization'], client);
  if (!who.ok) return { ok: false, status: 407, reason: who.reason, headers: PROXY_AUTHENTICATE };
  const problem = requestProblem(req, url, req.httpVersion === '1.1');
  if (problem !== null) return { ok: false, ...problem, session: who.session, headers: CLOSE };
  return { ok: true, url, session: who.session, client };
}
