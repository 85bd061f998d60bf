import { performance } from 'node:perf_hooks';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { sendJson } from '../http/json.js';
import { isBodyRefusal } from '../http/body.js';
import type { BridgeContext } from './bridge-calls.js';
import { handleHttpTool } from './bridge-http.js';
import { handleMcp } from './bridge-mcp.js';
import { clientAddress } from './identity.js';
import { compileRoutes } from './route-path.js';
import { handleIngest } from './ingest.js';
import { handleResult } from './ingest-result.js';
import { jsonRpcError, INVALID_REQUEST, PARSE_ERROR } from './mcp.js';

/**
 * The tool bridge listener: `POST /events` and `/events/result` for runner hooks, the rest to
 * `bridge.upstream` through the MCP or HTTP adapter. `Authorization: Bearer TOKEN` names the
 * agent (the same tokens as the proxy, so network and tool events form one trajectory); the
 * header is not forwarded unless `bridge.forwardAuthorization` says so.
 */
export function createBridgeServer(ctx: BridgeContext): Server {
  const routes = compileRoutes(ctx.config.bridge.routes);
  const mcp = ctx.config.bridge.protocol === 'mcp';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const start = performance.now();
    const client = clientAddress(req.socket.remoteAddress);
    const who = ctx.identity.fromBearer(req.headers.authorization, client);
    const path = (req.url ?? '/').split('?')[0];
    if (!who.ok) {
      ctx.pipeline.refusal(
        { source: 'bridge', client, method: req.method ?? '', target: path ?? '/' },
        401,
        who.reason,
      );
      res.setHeader('www-authenticate', 'Bearer realm="trajgate bridge"');
      return reject(res, mcp, 401, who.reason);
    }
    const session = { session: who.session, client };
    const request = { req, res, who: session, start };
    if (path === '/events' && req.method === 'POST') return handleIngest(ctx, request);
    if (path === '/events/result' && req.method === 'POST') return handleResult(ctx, request);
    if (ctx.proxy === null)
      return reject(
        res,
        mcp,
        404,
        'no tool server behind this bridge (bridge.upstream is not set); only POST /events is served',
      );
    try {
      if (mcp) return await handleMcp(ctx, ctx.proxy, request);
      return await handleHttpTool(ctx, routes, ctx.proxy, request);
    } catch (err) {
      if (!isBodyRefusal(err)) throw err;
      const status = err.status ?? 400;
      const target = path ?? '/';
      const ask = { source: 'bridge' as const, ...session, method: req.method ?? '', target };
      ctx.pipeline.refusal(ask, status, err.message);
      return reject(res, mcp, status, err.message, status === 400 ? PARSE_ERROR : INVALID_REQUEST);
    }
  };
  return createServer(
    { headersTimeout: ctx.config.limits.headerTimeout, requestTimeout: 0 },
    (req, res) => {
      const handled = handle(req, res);
      ctx.drain.track('request', handled);
      handled.catch((err: unknown) => {
        ctx.log.error({ err }, 'bridge: request failed');
        if (!res.headersSent) reject(res, mcp, 500, 'internal error; see the gateway log');
        else res.destroy();
      });
    },
  );
}

function reject(
  res: ServerResponse,
  mcp: boolean,
  status: number,
  message: string,
  code = INVALID_REQUEST,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (mcp) {
    const body = jsonRpcError(null, code, `trajgate: ${message}`);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
    return;
  }
  sendJson(res, status, { error: { message } });
}
