import type { AgentHead } from '../http/agent-message.js';
import { errnoCode } from '../errors.js';
import { expectationProblem, hostFieldProblem } from '../action/headers.js';
import { MAX_FIELDS } from './lean/request-parser.js';
import { methodOverrideProblem } from './method-override.js';

/** Why a request is refused before it is judged: its status and a one-line reason. */
export interface Problem {
  readonly status: number;
  readonly reason: string;
}

/**
 * Sent with a requestProblem refusal: a request that broke a rule may be framed in a way
 * nothing here trusts (`Transfer-Encoding: identity`), so what follows it on the connection is
 * never read as another request (RFC 9112 § 9.6).
 */
export const CLOSE: Readonly<Record<string, string>> = { connection: 'close' };

/**
 * What every request passes before it is judged, wherever it was read — absolute-form on the
 * proxy listener, an Upgrade, or a request inside a tunnel trajgate reads — so no path skips
 * one. What depends on the path stays with it (absolute-form and credentials on the listener,
 * the tunnel's Host in inner-handlers). `hostRequired`: HTTP/1.0 may omit Host on the listener;
 * inside a tunnel it is what the request is checked against.
 */
export function requestProblem(req: AgentHead, url: URL, hostRequired: boolean): Problem | null {
  const version = req.httpVersion;
  if (version !== '1.1' && version !== '1.0' && !isHttp2(req)) {
    // Node's parser takes `HTTP/2.0` and a versionless (0.9) line as requests; neither is
    // what upstreams will read from the HTTP/1.1 trajgate sends (RFC 9110 § 15.6.6).
    return { status: 505, reason: `HTTP/${version} is not supported: send HTTP/1.1` };
  }
  // node:http keeps 1,000 fields in `headers` (a few more in rawHeaders) while llhttp frames
  // the body by all of them: a Transfer-Encoding past the 1,000th would frame a body no check
  // here saw. The lean parser refuses the same (request-parser.ts).
  if (req.rawHeaders.length > 2 * MAX_FIELDS)
    return {
      status: 431,
      reason: `request header fields too large: more than ${MAX_FIELDS} fields`,
    };
  const host = hostFieldProblem(req.rawHeaders, hostRequired);
  if (host !== null) return { status: 400, reason: host };
  if (url.username !== '' || url.password !== '') {
    return {
      status: 400,
      reason: 'credentials in the request URL are not allowed (RFC 9110 § 4.2.4)',
    };
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked') {
    // RFC 9112 § 6.1: a coding we would have to pass on undecoded is refused, not guessed at.
    return {
      status: 501,
      reason: `transfer coding ${JSON.stringify(te)} is not supported (only chunked)`,
    };
  }
  const expectation = expectationProblem(req);
  if (expectation !== null) return { status: 417, reason: expectation };
  const override = methodOverrideProblem(req.rawHeaders, url.search);
  if (override !== null) return { status: 400, reason: override };
  return null;
}

/** A stream of trajgate's own HTTP/2 server (inner-h2), not an HTTP/1 line saying `HTTP/2.0`. */
function isHttp2(req: AgentHead): boolean {
  return req.httpVersionMajor === 2 && 'stream' in req;
}

/** What node:http's header timer reports (parseErrorProblem reads the code: 408). */
export const lateHead = (): Error & { code: string } =>
  Object.assign(new Error('request headers timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });

/**
 * How a request Node's parser (llhttp, strict) refused is answered, on the listener and inside
 * tunnels alike (`where` names the tunnel): status 0 when the client is gone and nobody is
 * left to answer.
 */
export function parseErrorProblem(
  err: Error & { code?: string; reason?: string },
  where = '',
): Problem {
  const code = err.code ?? errnoCode(err) ?? '';
  if (code === 'ECONNRESET' || code === 'EPIPE') return { status: 0, reason: '' };
  if (code === 'HPE_HEADER_OVERFLOW') {
    // The lean parser counts fields too (request-parser.ts): its reason says so, as requestProblem.
    const count = err.reason?.startsWith('more than') === true ? `: ${err.reason}` : '';
    return { status: 431, reason: `request header fields too large${where}${count}` };
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, reason: `request headers not received in time${where}` };
  const detail = (err.reason ?? err.message).replace(/\s+/g, ' ').slice(0, 200);
  return { status: 400, reason: `malformed request${where} (${code}: ${detail})` };
}
