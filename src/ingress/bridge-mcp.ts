import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Refusal } from '../action/refusal.js';
import { refusalLine } from '../action/refusal.js';
import type { ReverseProxy, Watcher } from '../action/reverse-proxy.js';
import type { Transfer } from '../action/transfer.js';
import { readJson } from '../http/body.js';
import type { BridgeContext, BridgeRequest } from './bridge-calls.js';
import { admitMessage, callOutcome, judgeCall } from './bridge-calls.js';
import { presence } from './context.js';
import { mcpAnswerWatch } from './mcp-answer.js';
import type { Owed } from './answer-gate.js';
import { answerGate } from './answer-gate.js';
import type { EventInput } from '../event/event.js';
import type { JsonRpcId, McpCall, McpInvalid } from './mcp.js';
import { INVALID_REQUEST, jsonRpcError, readMcpMessage, REFUSED, resolveCall } from './mcp.js';
import { mcpRefusal } from './mcp-refusal.js';
import { argumentsExfiltration, carrying } from './tool-exfiltration.js';
import type { Who } from './identity.js';
import { toolList } from './bridge-tool-list.js';
import { bridgeServer } from './tool-lists.js';
import { refusedTool } from './tool-refusal.js';

const TOOLS_CALL = 'tools/call ';

/** JSON-RPC code for an upstream that failed (implementation-defined range). */
const UPSTREAM_FAILED = -32002;

/** One message as it goes upstream (or is refused): `request` when it is owed a response. */
interface Outgoing {
  readonly id: JsonRpcId;
  readonly what: string;
  readonly request: boolean;
  readonly body: Buffer | null;
}

/**
 * One MCP request through the bridge. Its `Mcp-Session-Id` must be one issued to its agent
 * (mcp-sessions.ts). Every method but MCP's own protocol is judged event by event; a refused or
 * timed-out one is answered with a JSON-RPC error carrying the same id and a message written
 * for the model. While the session is paused every message is held, protocol ones, calls that
 * name no path, server streams and session ends included. What goes upstream is trajgate's
 * serialisation of the message it read (paths resolved, roots cut to the workspace), and the
 * answer (JSON or a Server-Sent Events stream) comes back as it is produced, as a flow of the
 * session (a pause corks it); a tools/list answer is read whole and cut to the tools the agent
 * may call (bridge-tool-list.ts), and a call of any other tool is refused, judged as a `tool`
 * event no verdict lets through.
 */
export async function handleMcp(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  request: BridgeRequest,
): Promise<void> {
  const { req, res, who } = request;
  if (req.method !== 'POST') return handleBodyless(ctx, proxy, request);
  const value = await readJson(req, ctx.config.bridge.maxBodyBytes);
  const claimed = ctx.sessions.claim(req, who.session);
  if (claimed !== null) {
    const id = (value as { id?: unknown } | null)?.id;
    const echoed = typeof id === 'string' || typeof id === 'number' ? id : null;
    return refuse(ctx, req, res, who, invalidSession(echoed, claimed));
  }
  const workspace = ctx.pipeline.workspaceFor(who.session);
  const message = readMcpMessage(value, req.headers, ctx.tools, workspace);
  if (message.kind === 'invalid') return refuse(ctx, req, res, who, message);
  if (message.kind === 'pass') {
    const roots = message.roots;
    if (roots && roots.removed.length > 0) {
      const kept = roots.kept.map((r) => r.uri);
      ctx.pipeline.rootsRemoved({ type: 'roots', ...who, removed: roots.removed, kept });
    }
    return admitted(ctx, proxy, request, message);
  }
  const denied = deniedTool(ctx, who.session, message);
  if (denied !== null) {
    const events = carrying([denied], paramsExfiltration(ctx, message), message.what);
    return call(ctx, proxy, request, { ...message, body: null }, events);
  }
  // Anything but a read (an unmapped tool too) may change where the next call's paths lead.
  const changes = message.targets.some((t) => t.kind !== 'read');
  await ctx.order.run(who.session, changes, async () => {
    const resolved = resolveCall(message, workspace);
    if (resolved.kind === 'invalid') return refuse(ctx, req, res, who, resolved);
    const outgoing = { ...message, body: resolved.body };
    const out = paramsExfiltration(ctx, message);
    const events = carrying(resolved.events, out, message.what);
    if (events.length === 0) return admitted(ctx, proxy, request, outgoing);
    await call(ctx, proxy, request, outgoing, events);
  });
}

/** A `tools/call` of a tool the agent may not call, as the refused event it is judged as. */
function deniedTool(ctx: BridgeContext, session: string, { what, message }: McpCall) {
  if (!what.startsWith(TOOLS_CALL)) return null;
  const tool = (message as { params: { name: string } }).params.name;
  const refuses = (server: string, name: string) =>
    ctx.toolPolicy.current.refuses(session, server, name);
  return refusedTool(refuses, bridgeServer(ctx.config.bridge), tool, tool);
}

/** A sentinel in a tool call's arguments (`argument content`), or another method's params. */
function paramsExfiltration(ctx: BridgeContext, { what, message }: McpCall) {
  const params = (message as { params?: Record<string, unknown> }).params;
  const tool = what.startsWith(TOOLS_CALL);
  const set = ctx.credentials.current;
  return argumentsExfiltration(set, tool ? params?.arguments : params, tool ? 'argument' : 'param');
}

/**
 * Streamable HTTP's GET (a server stream) and DELETE (a session's end): neither has a body,
 * and a body on them (or any other method) would reach the server unjudged.
 */
async function handleBodyless(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  request: BridgeRequest,
): Promise<void> {
  const { req, res, who } = request;
  const bodyless =
    (req.headers['content-length'] === undefined || req.headers['content-length'] === '0') &&
    req.headers['transfer-encoding'] === undefined;
  if ((req.method === 'GET' || req.method === 'DELETE') && bodyless) {
    const claimed = ctx.sessions.claim(req, who.session);
    if (claimed !== null) return refuse(ctx, req, res, who, invalidSession(null, claimed));
    const what = req.method === 'GET' ? 'GET server stream' : 'DELETE session';
    return admitted(ctx, proxy, request, { id: null, what, request: false, body: null });
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

function invalidSession(id: JsonRpcId, claimed: { status: 400 | 404; reason: string }) {
  const code = claimed.status === 404 ? REFUSED : INVALID_REQUEST;
  return { kind: 'invalid', id, code, message: `trajgate: ${claimed.reason}`, ...claimed } as const;
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
    { source: 'bridge', ...who, method: req.method ?? '', target: req.url ?? '/' },
    invalid.status === 200 ? 400 : invalid.status,
    invalid.message,
  );
  answer(res, invalid.status, jsonRpcError(invalid.id, invalid.code, invalid.message));
}

/** A message that makes no event: held while the session is paused, then forwarded. */
async function admitted(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  request: BridgeRequest,
  m: Outgoing,
): Promise<void> {
  const { req, res, who, start } = request;
  const waiting = presence(req.socket);
  const ruling = await admitMessage(ctx.pipeline, { ...who, waiting, what: m.what });
  const rids = ruling.rid === null ? [] : [ruling.rid];
  let transfer: Transfer;
  if (ruling.kind === 'gone') transfer = goneWhileHeld(m);
  else if (ruling.kind === 'refuse') transfer = refused(res, m, ruling.refusal);
  else transfer = await forward(ctx, proxy, request, m, ruling.rid);
  callOutcome(ctx.pipeline, rids, who.session, transfer, start);
}

async function call(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  request: BridgeRequest,
  m: Outgoing,
  events: readonly EventInput[],
): Promise<void> {
  const { req, res, who, start } = request;
  const ruling = await judgeCall(ctx.pipeline, events, {
    ...who,
    source: 'bridge',
    waiting: presence(req.socket),
    what: (e) => `${m.what} (${e.kind} ${e.target})`,
  });
  let transfer: Transfer;
  if (ruling.kind === 'gone') transfer = goneWhileHeld(m);
  else if (ruling.kind === 'refuse') transfer = refused(res, m, ruling.refusal);
  // A JSON-RPC error or isError answer is a failed call (a refusal above is not).
  else transfer = await forward(ctx, proxy, request, m, ruling.rids[0] ?? null, mcpAnswerWatch);
  callOutcome(ctx.pipeline, ruling.rids, who.session, transfer, start);
}

const goneWhileHeld = (m: Outgoing): Transfer => ({
  status: null,
  bytesUp: m.body?.length ?? 0,
  bytesDown: 0,
  error: 'client closed while held',
});

/** A refusal answered as mcp-refusal.ts renders it. */
function refused(res: ServerResponse, m: Outgoing, refusal: Refusal): Transfer {
  const { status, headers, text } = mcpRefusal(m.id, m.request, refusal);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  answer(res, status, text);
  return { status, bytesUp: m.body?.length ?? 0, bytesDown: 0, error: refusalLine(refusal) };
}

/** Sends `m` upstream as a flow of its session; the answer hands on Mcp-Session-Id tagged. */
async function forward(
  ctx: BridgeContext,
  proxy: ReverseProxy,
  { req, res, who, start }: BridgeRequest,
  m: Outgoing,
  rid: number | null,
  watcher?: Watcher,
): Promise<Transfer> {
  const flow = ctx.pipeline.sessionFlow('tool', who.session, m.what, rid);
  const ask = {
    source: 'bridge',
    ...who,
    method: req.method ?? '',
    target: req.url ?? '/',
  } as const;
  const dropped = (why: string) => void ctx.pipeline.refusal(ask, 502, why);
  try {
    const watch = ctx.sessions.issuing(who.session, watcher);
    const { transfer, failure } =
      m.what === 'tools/list' && m.request
        ? await toolList(ctx, proxy, { req, res, who, start }, m, flow)
        : await proxy.forward(req, res, m.body, watch, flow, answerGate(owed(m), dropped));
    if (failure) {
      ctx.pipeline.refusal(ask, failure.status, failure.reason);
      const text = jsonRpcError(m.id, UPSTREAM_FAILED, `trajgate: ${failure.reason}`);
      answer(res, failure.status, text);
    }
    return transfer;
  } finally {
    flow.end();
  }
}

/** Whom `m`'s answer may carry a response to: its request, or nobody (GET, a notification). */
const owed = (m: Outgoing): Owed => (m.request ? { id: m.id } : null);

function answer(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
