import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ReverseProxy } from '../action/reverse-proxy.js';
import { readBody } from './body.js';
import type { BridgeContext } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import { presence } from './context.js';
import type { JsonRpcId } from './mcp.js';
import { INVALID_REQUEST, jsonRpcError, readMcpMessage, REFUSED } from './mcp.js';

/** JSON-RPC code for an upstream that failed (implementation-defined range). */
const UPSTREAM_FAILED = -32002;

/**
 * One MCP request through the bridge. Tool calls are judged event by event; a refused or
 * timed-out call is answered with a JSON-RPC error carrying the same id and a message written
 * for the model; anything else goes to the upstream untouched, and its answer (JSON or a
 * Server-Sent Events stream) comes back as it is produced.
 */
export async function handleMcp(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  req: IncomingMessage,
  res: ServerResponse,
  who: { session: string; client: string },
): Promise<void> {
  const start = performance.now();
  if (req.method !== 'POST') {
    // Streamable HTTP: GET opens a server stream, DELETE ends a session; neither has a body,
    // and a body on them (or any other method) would reach the server unjudged.
    const bodyless =
      req.headers['content-length'] === undefined || req.headers['content-length'] === '0';
    if (
      (req.method === 'GET' || req.method === 'DELETE') &&
      bodyless &&
      req.headers['transfer-encoding'] === undefined
    ) {
      await forward(ctx, proxy, req, res, null, null, who);
      return;
    }
    const reason = `${req.method} with a body is not part of MCP's streamable HTTP (POST, GET, DELETE)`;
    ctx.pipeline.refusal(
      { source: 'bridge', ...who, method: req.method ?? '', target: req.url ?? '/' },
      405,
      reason,
    );
    res.setHeader('allow', 'POST, GET, DELETE');
    res.setHeader('connection', 'close');
    return answer(res, 405, jsonRpcError(null, INVALID_REQUEST, `trajgate: ${reason}`));
  }
  const body = await readBody(req, ctx.config.bridge.maxBodyBytes);
  const message = readMcpMessage(body, req.headers, ctx.tools);
  if (message.kind === 'invalid') {
    ctx.pipeline.refusal(
      { source: 'bridge', ...who, method: 'POST', target: req.url ?? '/' },
      400,
      message.message,
    );
    return answer(res, 400, jsonRpcError(message.id, message.code, message.message));
  }
  if (message.kind === 'pass') {
    await forward(ctx, proxy, req, res, body, message.id, who);
    return;
  }
  const ruling = await judgeCall(ctx.pipeline, message.events, {
    ...who,
    source: 'bridge',
    waiting: presence(req.socket),
    what: (e) => `tools/call ${message.tool} (${e.kind} ${e.target})`,
  });
  if (ruling.gone) {
    const transfer = {
      status: null,
      bytesUp: body.length,
      bytesDown: 0,
      error: 'client closed while held',
    };
    return callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
  }
  if (!ruling.allowed) {
    const refusal = ruling.refusal;
    const d = ruling.decision;
    const text = jsonRpcError(message.id, REFUSED, refusal?.body.trim() ?? 'refused by trajgate', {
      verdict: d?.verdict ?? null,
      boundary: d?.boundary ?? null,
      reason: d?.reason ?? refusal?.reason ?? null,
    });
    answer(res, 200, text);
    const transfer = {
      status: 200,
      bytesUp: body.length,
      bytesDown: 0,
      error: refusal?.reason ?? 'refused',
    };
    return callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
  }
  const transfer = await forward(ctx, proxy, req, res, body, message.id, who);
  callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
}

async function forward(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer | null,
  id: JsonRpcId,
  who: { session: string; client: string },
) {
  const { transfer, failure } = await proxy.forward(req, res, body);
  if (failure) {
    ctx.pipeline.refusal(
      { source: 'bridge', ...who, method: req.method ?? '', target: req.url ?? '/' },
      failure.status,
      failure.reason,
    );
    answer(res, failure.status, jsonRpcError(id, UPSTREAM_FAILED, `trajgate: ${failure.reason}`));
  }
  return transfer;
}

function answer(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
