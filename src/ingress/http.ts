import type { AgentAnswer, AgentRequest } from '../http/agent-message.js';
import { performance } from 'node:perf_hooks';
import { Capture } from '../action/capture.js';
import { readUnforwarded } from '../action/capture-unforwarded.js';
import { announcedLength } from '../action/headers.js';
import { sendRefusal } from '../action/respond.js';
import { refusalLine } from '../action/refusal.js';
import { upstreamOutcome } from '../action/transfer.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal, presence } from './context.js';
import { checkRequest } from './request-checks.js';
import type { Who } from './identity.js';
import type { Dial, Refuse, Ruling } from '../pipeline/ruling.js';
import { systemMessage } from '../os-error.js';
import { credentialInput, credentialPlan, preparedRequest } from './credential-request.js';
import { bodyWatch } from './body-watch.js';
import type { BodyWatch } from '../action/response-relay.js';
import { hasBody } from '../action/headers.js';
import type { Ask } from '../pipeline/ruling.js';

/** An absolute-form request (`GET http://host/path`), as agents send through HTTP_PROXY. */
export async function handleHttp(
  ctx: ProxyContext,
  req: AgentRequest,
  res: AgentAnswer,
): Promise<void> {
  const start = performance.now();
  const checked = checkRequest(ctx, req);
  if (!checked.ok) {
    const { status, reason, session, headers } = checked;
    return sendRefusal(res, earlyRefusal(ctx, req, status, reason, session), headers);
  }
  const { url, session, client } = checked;
  await serveHttp(ctx, req, res, url, req.url ?? '', { session, client }, start);
}

/**
 * Judges one HTTP request whose URL is known (plain absolute-form, or inside an intercepted
 * TLS tunnel; `target` is the URL as the agent wrote it, for the journal) and forwards, refuses
 * or holds it; journals its outcome (`failed` when the upstream answered ≥ 400 or could not be
 * reached; a refusal is not a failure), and its capture when `capture.bodies` is on (a refused
 * request's too, with the body it tried to send, read but never forwarded). The request
 * passed requestProblem first, on whichever path it came (checkRequest, InnerHttp).
 */
export async function serveHttp(
  ctx: ProxyContext,
  req: AgentRequest,
  res: AgentAnswer,
  url: URL,
  target: string,
  who: Who,
  start: number,
): Promise<void> {
  const method = req.method ?? 'GET';
  // Only with credentials configured is anything scanned (and awaited).
  const planning = credentialPlan(ctx, req, res, url, target, who.session);
  const plan = planning === null ? null : await planning;
  const ask = {
    session: who.session,
    client: who.client,
    source: 'proxy' as const,
    input: { kind: 'network' as const, target, method, url, ...credentialInput(plan) },
    what: `${method} ${target}`,
    connect: false,
    bytes: announcedLength(req.headers),
    waiting: presence(req.socket),
  };
  // A request whose flow was frozen before undici wrote it was not sent: judged again.
  for (let rid: number | null = null; ;) {
    const ruling: Ruling<Dial> = await ctx.pipeline.judge(ask, rid);
    if (ruling.kind === 'gone') {
      if (ruling.rid !== null) {
        ctx.pipeline.outcome(ruling.rid, who.session, closedWhileHeld, performance.now() - start);
      }
      return;
    }
    if (ruling.kind === 'refuse') return refuse(ctx, req, res, url, who, ruling, start);
    const flow = ctx.pipeline.flow('request', ruling);
    const capture = ctx.capture ? new Capture(ctx.capture, method, url, req.rawHeaders) : undefined;
    const prepared = preparedRequest(plan, url, capture);
    // A body that goes up as the agent sends it is watched for sentinels as it streams.
    const streams = plan !== null && prepared?.body === undefined;
    const watch = streams ? watchBody(ctx, req, ask) : undefined;
    const { address } = ruling.dial;
    const rewrite = { prepared, watch };
    const sent = await ctx.forwarder.forward(req, res, url, address, capture, flow, rewrite);
    flow.end();
    if (sent.stopped === 'held') {
      rid = ruling.rid;
      continue;
    }
    const transfer = upstreamOutcome(sent);
    ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
    capture?.save(ruling.rid, who.session, captureFailed(ctx));
    return;
  }
}

/** The body's watch, for a request whose body goes up as the agent sends it. */
function watchBody(ctx: ProxyContext, req: AgentRequest, ask: Ask): BodyWatch | undefined {
  if (!hasBody(req)) return undefined;
  const { session, client, input, what } = ask;
  return bodyWatch(ctx, req, { session, client, target: input.target, what }) ?? undefined;
}

/** A refused request: answered, its outcome journaled, its capture saved with what it sent. */
async function refuse(
  ctx: ProxyContext,
  req: AgentRequest,
  res: AgentAnswer,
  url: URL,
  who: Who,
  ruling: Refuse,
  start: number,
): Promise<void> {
  const capture = ruling.rid === null ? undefined : await captureRefused(ctx, req, url);
  sendRefusal(res, ruling.refusal);
  capture?.refused(ruling.refusal);
  if (ruling.rid === null) return;
  const transfer = {
    status: ruling.refusal.status,
    bytesUp: 0,
    bytesDown: 0,
    error: refusalLine(ruling.refusal),
  };
  ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
  capture?.save(ruling.rid, who.session, captureFailed(ctx));
}

/** A refused request's capture, with what the agent sent of its body (never forwarded). */
async function captureRefused(
  ctx: ProxyContext,
  req: AgentRequest,
  url: URL,
): Promise<Capture | undefined> {
  if (ctx.capture === null) return undefined;
  const capture = new Capture(ctx.capture, req.method ?? 'GET', url, req.rawHeaders);
  await readUnforwarded(req, capture, ctx.capture.maxBytes, ctx.limits.bodyTimeout);
  return capture;
}

const captureFailed = (ctx: ProxyContext) => (err: Error) =>
  ctx.log.warn(
    { err },
    `capture could not be written: ${systemMessage(err, { op: 'write', key: 'journal.path' })}`,
  );

export const closedWhileHeld = {
  status: null,
  bytesUp: 0,
  bytesDown: 0,
  error: 'client closed while held',
};
