import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Flow } from '../action/flows.js';
import type { ReverseProxy, Watcher } from '../action/reverse-proxy.js';
import { readJson } from '../http/body.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import { callOutcome, judgeCall } from './bridge-calls.js';
import { presence } from './context.js';
import { mcpAnswerWatch } from './mcp-answer.js';
import type { EventInput } from '../event/event.js';
import type { JsonRpcId, McpInvalid } from './mcp.js';
import { INVALID_REQUEST, jsonRpcError, readMcpMessage, REFUSED, resolveCall } from './mcp.js';
import type { Who } from './identity.js';

/** JSON-RPC code for an upstream that failed (implementation-defined range). */
const UPSTREAM_FAILED = -32002;

/**
 * One MCP request through the bridge. Tool calls are judged event by event; a refused or
 * timed-out call is answered with a JSON-RPC error carrying the same id and a message written
 * for the model. What goes upstream is trajgate's serialisation of the message it read (tool
 * paths resolved, roots cut to the workspace), and the answer (JSON or a Server-Sent Events
 * stream) comes back as it is produced.
 */
export async function handleMcp(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  request: BridgeRequest,
): Promise<void> {
  const { req, res, who } = request;
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
  const value = await readJson(req, ctx.config.bridge.maxBodyBytes);
  const workspace = ctx.pipeline.workspaceFor(who.session);
  const message = readMcpMessage(value, req.headers, ctx.tools, workspace);
  if (message.kind === 'invalid') return refuse(ctx, req, res, who, message);
  if (message.kind === 'pass') {
    const roots = message.roots;
    if (roots && roots.removed.length > 0) {
      const kept = roots.kept.map((r) => r.uri);
      ctx.pipeline.rootsRemoved({ type: 'roots', ...who, removed: roots.removed, kept });
    }
    await forward(ctx, proxy, req, res, message.body, message.id, who);
    return;
  }
  // Anything but a read (an unmapped tool too) may change where the next call's paths lead.
  const changes = message.targets?.some((t) => t.kind !== 'read') ?? true;
  await ctx.order.run(who.session, changes, async () => {
    const resolved = resolveCall(message, workspace);
    if (resolved.kind === 'invalid') return refuse(ctx, req, res, who, resolved);
    const { id, tool } = message;
    await call(ctx, proxy, request, { id, tool, ...resolved });
  });
}

function refuse(
  ctx: BridgeContext,
  req: IncomingMessage,
  res: ServerResponse,
  who: Who,
  invalid: McpInvalid,
): void {
  // A refused path is bad input (400) though its JSON-RPC error travels in a 200, so that
  // clients hand it to the model rather than fail the transport.
  ctx.pipeline.refusal(
    { source: 'bridge', ...who, method: 'POST', target: req.url ?? '/' },
    400,
    invalid.message,
  );
  answer(res, invalid.status, jsonRpcError(invalid.id, invalid.code, invalid.message));
}

async function call(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  { req, res, who, start }: BridgeRequest,
  message: { id: JsonRpcId; tool: string; events: EventInput[]; body: Buffer },
): Promise<void> {
  const { body } = message;
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
  // A JSON-RPC error or isError answer is a failed call (a refusal above is not).
  const what = `tools/call ${message.tool}`;
  const flow = ctx.pipeline.sessionFlow('tool', who.session, what, ruling.rids[0] ?? null);
  try {
    const watch = mcpAnswerWatch;
    const transfer = await forward(ctx, proxy, req, res, body, message.id, who, watch, flow);
    callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
  } finally {
    flow.end();
  }
}

async function forward(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer | null,
  id: JsonRpcId,
  who: Who,
  watcher?: Watcher,
  flow?: Flow,
) {
  const { transfer, failure } = await proxy.forward(req, res, body, watcher, flow);
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
