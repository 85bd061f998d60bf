import type { AgentHead } from '../http/agent-message.js';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { upstreamOutcome } from '../action/transfer.js';
import { sendUpgrade } from '../action/upgrade.js';
import { upgradeRefusal } from '../http/upgrade-protocols.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { ProxyContext } from './context.js';
import { heldPresence } from './context.js';
import type { Who } from './identity.js';
import { checkRequest } from './request-checks.js';
import { upgradeCredentials } from './credential-request.js';
import { sentinelWatch } from './sentinel-watch.js';
import { WsUnmask } from './ws-unmask.js';
import type { Watch } from '../action/relay-direction.js';
import { CONNECT_ANSWER } from './tunnel-answer.js';
import type { RawRequest } from './raw-request.js';
import type { Ended } from './tunnel-track.js';
import { closedWhileOpening, judgeAndConnect, relayTracked, tunnelSlot } from './tunnel-track.js';

/** `ws:` names the same origin-form request on the same default port as `http:`. */
const SCHEMES: ReadonlySet<string> = new Set(['http:', 'ws:']);

/**
 * An HTTP Upgrade on the proxy listener (RFC 9110 § 7.8), such as WebSocket over plain HTTP:
 * absolute-form `http:` or `ws:` with the agent's credentials (checkRequest), then served as
 * every upgrade is (serveUpgrade).
 */
export async function handleUpgrade(ctx: ProxyContext, raw: RawRequest): Promise<void> {
  const checked = checkRequest(ctx, raw.req, SCHEMES);
  if (!checked.ok)
    return raw.refuse(checked.status, checked.reason, checked.session, checked.headers);
  const { session, client, url } = checked;
  await serveUpgrade(ctx, raw, { session, client }, url, raw.req.url ?? '');
}

/**
 * An upgrade that passed its path's checks (the listener's, or requestProblem and the tunnel's
 * names inside a read or intercepted tunnel), judged as `url` and journaled as `target`. It is
 * sent upstream as a request (over TLS for an `https:` URL, verified as the Forwarder
 * verifies); only the upstream's `101` makes the connection a tunnel; from its judgement on it
 * is a flow that follows its session (while connecting, while waiting for the `101`,
 * relaying). Until then nothing the client sent after the request, but a Content-Length body,
 * goes upstream.
 */
export async function serveUpgrade(
  ctx: ProxyContext,
  raw: RawRequest,
  who: Who,
  url: URL,
  target: string,
): Promise<void> {
  const { req, socket, head, refuse } = raw;
  const { session, client } = who;
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
    const ask: NetworkAsk = {
      session,
      source: 'proxy',
      client,
      input: {
        kind: 'network',
        target,
        method,
        url,
        ...upgradeCredentials(ctx, req, url, target, session),
      },
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

/**
 * The watch over what the agent sends after the switch: a WebSocket's messages unmasked (RFC
 * 6455 § 5.3), any other protocol's bytes as they are. Null without credentials.
 */
function watchUp(ctx: ProxyContext, ask: NetworkAsk, req: AgentHead): Watch | null {
  const { session, client, what } = ask;
  const websocket = req.headers.upgrade?.toLowerCase() === 'websocket';
  const where = websocket ? 'WebSocket messages' : 'upgraded bytes';
  const watch = sentinelWatch(ctx, { session, client, target: ask.input.target, what, where });
  if (watch === null || !websocket) return watch;
  const frames = new WsUnmask();
  return (chunk) => watch(frames.write(chunk));
}

async function upgrade(
  ctx: ProxyContext,
  ask: NetworkAsk,
  req: AgentHead,
  socket: Socket,
  url: URL,
): Promise<Ended> {
  // HTTP/1.1 upstream: an Upgrade is HTTP/1.1's (RFC 9113 § 8.6 has none).
  const tls =
    url.protocol === 'https:' ? ctx.forwarder.tls.options(url.hostname, ['http/1.1']) : undefined;
  const connected = await judgeAndConnect(ctx, ask, socket, 'upgrade', CONNECT_ANSWER, tls);
  if (!('upstream' in connected)) return connected;
  const { upstream, name, rid, flow } = connected;
  const limit = ctx.limits.upstreamTimeout;
  // A compressed WebSocket message (RFC 7692) could not be looked into for sentinels: with
  // credentials, no extension is offered, so the messages go as written.
  const drop = ctx.credentials.scanner === null ? undefined : 'sec-websocket-extensions';
  const answer = await sendUpgrade(socket, req, url, upstream, name, limit, flow, drop);
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
  const piped = await relayTracked(ctx, socket, connected, opening, {
    watchUp: watchUp(ctx, ask, req),
  });
  return { status: 101, ...piped, bytesUp: answer.bytesUp + piped.bytesUp, rid };
}
