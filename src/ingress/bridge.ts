import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { sendJson } from '../review/http-json.js';
import { BodyTooLarge } from './body.js';
import type { BridgeContext } from './bridge-calls.js';
import { compileRoutes, handleHttpTool } from './bridge-http.js';
import { handleMcp } from './bridge-mcp.js';
import { clientAddress } from './identity.js';
import { handleIngest } from './ingest.js';
import { jsonRpcError, INVALID_REQUEST } from './mcp.js';

/**
 * The tool bridge listener: `POST /events` for runner hooks, everything else to
 * `bridge.upstream` through the MCP or HTTP adapter. `Authorization: Bearer TOKEN` names the
 * agent (the same tokens as the proxy, so network and tool events form one trajectory); the
 * header is not forwarded unless `bridge.forwardAuthorization` says so.
 */
export function createBridgeServer(ctx: BridgeContext): Server {
  const routes = compileRoutes(ctx.config.bridge.routes);
  const mcp = ctx.config.bridge.protocol === 'mcp';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
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
    if (path === '/events' && req.method === 'POST') return handleIngest(ctx, req, res, session);
    if (ctx.proxy === null)
      return reject(
        res,
        mcp,
        404,
        'no tool server behind this bridge (bridge.upstream is not set); only POST /events is served',
      );
    if (mcp) return handleMcp(ctx, ctx.proxy, req, res, session);
    return handleHttpTool(ctx, routes, ctx.proxy, req, res, session);
  };
  return createServer(
    { headersTimeout: ctx.config.limits.headerTimeout, requestTimeout: 0 },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        if (err instanceof BodyTooLarge) {
          ctx.pipeline.refusal(
            { source: 'bridge', client: clientAddress(req.socket.remoteAddress) },
            413,
            err.message,
          );
          return reject(res, mcp, 413, err.message);
        }
        ctx.log.error({ err }, 'bridge: request failed');
        if (!res.headersSent) reject(res, mcp, 500, 'internal error; see the gateway log');
        else res.destroy();
      });
    },
  );
}

function reject(res: ServerResponse, mcp: boolean, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (mcp) {
    const body = jsonRpcError(null, INVALID_REQUEST, `trajgate: ${message}`);
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
