import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { upstreamOutcome } from '../action/transfer.js';
import { sendUpgrade } from '../action/upgrade.js';
import { upgradeRefusal } from '../http/upgrade-protocols.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { ProxyContext } from './context.js';
import { heldPresence } from './context.js';
import { checkRequest } from './request-checks.js';
import type { Ended, RawRequest } from './tunnel-track.js';
import { closedWhileOpening, judgeAndConnect, relayTracked, tunnelSlot } from './tunnel-track.js';

/** `ws:` names the same origin-form request on the same default port as `http:`. */
const SCHEMES: ReadonlySet<string> = new Set(['http:', 'ws:']);

/**
 * An HTTP Upgrade through the proxy (RFC 9110 § 7.8), such as WebSocket over plain HTTP. It is
 * checked and judged like any request and sent upstream as one; only the upstream's `101`
 * makes the connection a tunnel; from its judgement on it is a flow that follows its session
 * (while connecting, while waiting for the `101`, relaying). Until
 * then nothing the client sent after the request, but a Content-Length body, goes upstream.
 */
export async function handleUpgrade(ctx: ProxyContext, raw: RawRequest): Promise<void> {
  const { req, socket, head, refuse } = raw;
  const checked = checkRequest(ctx, req, SCHEMES);
  if (!checked.ok) return refuse(checked.status, checked.reason, checked.session, checked.headers);
  const { session, client, url } = checked;
  // Before judging: a protocol whose traffic could not be judged is never asked for.
  const protocol = upgradeRefusal(req.rawHeaders, ctx.upgrades);
  if (protocol !== null) return refuse(protocol.status, protocol.reason, session);
  if (req.headers['transfer-encoding'] !== undefined) {
    // Node hands the connection over where the head ends; the end of a chunked body is only
    // known to a chunked parser, and a guess would let the next bytes pass as body.
    return refuse(
      501,
      'a chunked request body on an Upgrade is not supported: send it with Content-Length',
      session,
    );
  }
  const release = tunnelSlot(ctx, session);
  if (typeof release !== 'function') return refuse(release.status, release.reason, session);
  if (head.length > 0) socket.unshift(head);
  try {
    const method = req.method ?? 'GET';
    const target = req.url ?? '';
    const ask: NetworkAsk = {
      session,
      source: 'proxy',
      client,
      input: { kind: 'network', target, method, url },
      what: `${method} ${target}`,
      connect: false,
      waiting: heldPresence(socket),
    };
    const transfer = await upgrade(ctx, ask, req, socket, url);
    if (transfer.rid !== null)
      ctx.pipeline.outcome(transfer.rid, session, transfer, performance.now() - raw.start);
  } finally {
    release();
  }
}

async function upgrade(
  ctx: ProxyContext,
  ask: NetworkAsk,
  req: IncomingMessage,
  socket: Socket,
  url: URL,
): Promise<Ended> {
  const connected = await judgeAndConnect(ctx, ask, socket, 'upgrade');
  if (!('upstream' in connected)) return connected;
  const { upstream, name, rid, flow } = connected;
  const limit = ctx.limits.upstreamTimeout;
  const answer = await sendUpgrade(socket, req, url, upstream, name, limit, flow);
  if (answer.kind === 'answered') {
    flow.end();
    return { ...upstreamOutcome(answer.transfer), rid };
  }
  // Switched: the `101` goes to the agent only while its session runs (held while paused).
  if (!flow.live && !(await flow.gate())) {
    upstream.destroy();
    return closedWhileOpening(socket, flow);
  }
  const opening = { toClient: answer.head, toUpstream: [] };
  const piped = await relayTracked(ctx, socket, connected, opening);
  return { status: 101, ...piped, bytesUp: answer.bytesUp + piped.bytesUp, rid };
}
