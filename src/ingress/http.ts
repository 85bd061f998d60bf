import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Capture } from '../action/capture.js';
import { expectationProblem, hostFieldProblem } from '../action/headers.js';
import { sendRefusal } from '../action/respond.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal, presence, PROXY_AUTHENTICATE } from './context.js';
import { clientAddress } from './identity.js';

const ABSOLUTE = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

/** An absolute-form request (`GET http://host/path`), as agents send through HTTP_PROXY. */
export async function handleHttp(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const start = performance.now();
  const client = clientAddress(req.socket.remoteAddress);
  const target = req.url ?? '';
  const refuse = (
    status: number,
    reason: string,
    session?: string,
    headers?: Record<string, string>,
  ) => sendRefusal(res, earlyRefusal(ctx, req, status, reason, session, headers));
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
  if (url.protocol !== 'http:') {
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
  const who = ctx.identity.fromProxyAuthorization(req.headers['proxy-authorization'], client);
  if (!who.ok) return refuse(407, who.reason, undefined, PROXY_AUTHENTICATE);
  await serveHttp(ctx, req, res, url, target, { session: who.session, client }, start);
}

/**
 * Judges one HTTP request whose URL is known (plain absolute-form, or inside an intercepted
 * TLS tunnel; `target` is the URL as the agent wrote it, for the journal) and forwards, refuses or holds it; journals its outcome, and its capture when
 * `capture.bodies` is on.
 */
export async function serveHttp(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  target: string,
  who: { session: string; client: string },
  start: number,
): Promise<void> {
  const method = req.method ?? 'GET';
  const expectation = expectationProblem(req);
  if (expectation !== null) {
    const ask = { source: 'proxy' as const, client: who.client, session: who.session, method, target };
    return sendRefusal(res, ctx.pipeline.refusal(ask, 417, expectation));
  }
  const ruling = await ctx.pipeline.judge({
    session: who.session,
    client: who.client,
    source: 'proxy',
    input: { kind: 'network', target, method, url },
    what: `${method} ${target}`,
    connect: false,
    waiting: presence(req.socket),
  });
  if (ruling.kind === 'gone') {
    if (ruling.rid !== null) {
      ctx.pipeline.outcome(ruling.rid, who.session, closedWhileHeld, performance.now() - start);
    }
    return;
  }
  if (ruling.kind === 'refuse') {
    sendRefusal(res, ruling.refusal);
    if (ruling.rid !== null) {
      const transfer = {
        status: ruling.refusal.status,
        bytesUp: 0,
        bytesDown: 0,
        error: ruling.refusal.reason,
      };
      ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
    }
    return;
  }
  const capture = ctx.capture
    ? new Capture(ctx.capture, method, url.href, req.rawHeaders)
    : undefined;
  const transfer = await ctx.forwarder.forward(req, res, url, ruling.address as string, capture);
  ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
  capture?.save(ruling.rid, who.session, (err) =>
    ctx.log.warn({ err }, 'capture could not be written'),
  );
}

export const closedWhileHeld = {
  status: null,
  bytesUp: 0,
  bytesDown: 0,
  error: 'client closed while held',
};
