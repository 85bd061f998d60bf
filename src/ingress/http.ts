import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Capture } from '../action/capture.js';
import { readUnforwarded } from '../action/capture-unforwarded.js';
import { announcedLength, expectationProblem } from '../action/headers.js';
import { sendRefusal } from '../action/respond.js';
import { upstreamOutcome } from '../action/transfer.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal, presence } from './context.js';
import { checkRequest } from './request-checks.js';
import type { Who } from './identity.js';

/** An absolute-form request (`GET http://host/path`), as agents send through HTTP_PROXY. */
export async function handleHttp(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const start = performance.now();
  const checked = checkRequest(ctx, req);
  if (!checked.ok) {
    const { status, reason, headers } = checked;
    return sendRefusal(res, earlyRefusal(ctx, req, status, reason, undefined, headers));
  }
  const { url, session, client } = checked;
  await serveHttp(ctx, req, res, url, req.url ?? '', { session, client }, start);
}

/**
 * Judges one HTTP request whose URL is known (plain absolute-form, or inside an intercepted
 * TLS tunnel; `target` is the URL as the agent wrote it, for the journal) and forwards, refuses
 * or holds it; journals its outcome (`failed` when the upstream answered ≥ 400 or could not be
 * reached; a refusal is not a failure), and its capture when `capture.bodies` is on (a refused
 * request's too, with the body it tried to send, read but never forwarded). An
 * expectation other than 100-continue is refused (417) before judging: nothing would meet it.
 */
export async function serveHttp(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  target: string,
  who: Who,
  start: number,
): Promise<void> {
  const method = req.method ?? 'GET';
  const expectation = expectationProblem(req);
  if (expectation !== null) {
    const ask = { source: 'proxy' as const, ...who, method, target };
    return sendRefusal(res, ctx.pipeline.refusal(ask, 417, expectation));
  }
  const ruling = await ctx.pipeline.judge({
    session: who.session,
    client: who.client,
    source: 'proxy',
    input: { kind: 'network', target, method, url },
    what: `${method} ${target}`,
    connect: false,
    bytes: announcedLength(req.headers),
    waiting: presence(req.socket),
  });
  if (ruling.kind === 'gone') {
    if (ruling.rid !== null) {
      ctx.pipeline.outcome(ruling.rid, who.session, closedWhileHeld, performance.now() - start);
    }
    return;
  }
  if (ruling.kind === 'refuse') {
    const capture = ruling.rid === null ? undefined : await captureRefused(ctx, req, url);
    sendRefusal(res, ruling.refusal);
    capture?.refused(ruling.refusal);
    if (ruling.rid !== null) {
      const transfer = {
        status: ruling.refusal.status,
        bytesUp: 0,
        bytesDown: 0,
        error: ruling.refusal.reason,
      };
      ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
      capture?.save(ruling.rid, who.session, captureFailed(ctx));
    }
    return;
  }
  const capture = ctx.capture ? new Capture(ctx.capture, method, url, req.rawHeaders) : undefined;
  const sent = await ctx.forwarder.forward(req, res, url, ruling.dial.address, capture);
  const transfer = upstreamOutcome(sent);
  ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
  capture?.save(ruling.rid, who.session, captureFailed(ctx));
}

/** A refused request's capture, with what the agent sent of its body (never forwarded). */
async function captureRefused(
  ctx: ProxyContext,
  req: IncomingMessage,
  url: URL,
): Promise<Capture | undefined> {
  if (ctx.capture === null) return undefined;
  const capture = new Capture(ctx.capture, req.method ?? 'GET', url, req.rawHeaders);
  await readUnforwarded(req, capture, ctx.capture.maxBytes, ctx.limits.bodyTimeout);
  return capture;
}

const captureFailed = (ctx: ProxyContext) => (err: Error) =>
  ctx.log.warn({ err }, 'capture could not be written');

export const closedWhileHeld = {
  status: null,
  bytesUp: 0,
  bytesDown: 0,
  error: 'client closed while held',
};
