import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { authority } from '../action/forward.js';
import { plainRefusal, writeRawRefusal } from '../action/respond.js';
import { upstreamFailure } from '../action/transfer.js';
import { connectUpstream, relay } from '../action/tunnel.js';
import type { NetworkSubject } from '../event/event.js';
import { parseAuthority } from '../event/network-target.js';
import type { Ask } from '../pipeline.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal, heldPresence, PROXY_AUTHENTICATE } from './context.js';
import { clientAddress } from './identity.js';
import { openInspected } from './inspect.js';
import type { Ended } from './tunnel-track.js';
import { gone, refused, track } from './tunnel-track.js';

const CONNECT_FORM = 'CONNECT takes an authority, host:port (RFC 9110 § 9.3.6)';

/**
 * `CONNECT host:port`. A tunnel to a host:port that an approval covers as such is judged once
 * and relayed blind. One whose requests must be read to be judged (port 80, a host only
 * method or path patterns allow, or `tls.intercept`) is opened and read: see inspect.ts. Either
 * way the `200` is only sent once the tunnel may open, never while its session is paused, and
 * the open tunnel then follows its session's state (action/live-tunnels).
 */
export async function handleConnect(
  ctx: ProxyContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const start = performance.now();
  socket.on('error', () => socket.destroy());
  const client = clientAddress(req.socket.remoteAddress);
  const target = req.url ?? '';
  const refuse = (
    status: number,
    reason: string,
    session?: string,
    headers?: Record<string, string>,
  ) => writeRawRefusal(socket, earlyRefusal(ctx, req, status, reason, session, headers));
  let subject: NetworkSubject;
  try {
    subject = parseAuthority(target);
  } catch {
    return refuse(400, `${CONNECT_FORM}, not ${JSON.stringify(target.slice(0, 200))}`);
  }
  const who = ctx.identity.fromProxyAuthorization(req.headers['proxy-authorization'], client);
  if (!who.ok) return refuse(407, who.reason, undefined, PROXY_AUTHENTICATE);
  const open = ctx.tunnels.get(who.session) ?? 0;
  if (open >= ctx.limits.tunnelsPerSession) {
    return refuse(
      429,
      `too many open tunnels for this session (limit ${ctx.limits.tunnelsPerSession})`,
      who.session,
    );
  }
  ctx.tunnels.set(who.session, open + 1);
  if (head.length > 0) socket.unshift(head);
  try {
    const ask: Ask = {
      session: who.session,
      source: 'proxy',
      client,
      input: { kind: 'network', target },
      what: `CONNECT ${target}`,
      connect: true,
      waiting: heldPresence(socket),
    };
    const plain = subject.port === 80 || ctx.pipeline.inspects(who.session, target);
    const transfer =
      plain || ctx.intercept?.matches(subject) === true
        ? await openInspected(ctx, ask, socket as Socket, subject, plain)
        : await blind(ctx, ask, socket as Socket);
    if (transfer.rid !== null)
      ctx.pipeline.outcome(transfer.rid, who.session, transfer, performance.now() - start);
  } finally {
    const left = (ctx.tunnels.get(who.session) ?? 1) - 1;
    if (left === 0) ctx.tunnels.delete(who.session);
    else ctx.tunnels.set(who.session, left);
  }
}

async function blind(ctx: ProxyContext, ask: Ask, socket: Socket): Promise<Ended> {
  const ruling = await ctx.pipeline.judge(ask);
  if (ruling.kind === 'gone') return gone(socket, ruling.rid);
  if (ruling.kind === 'refuse') return { ...refused(socket, ruling.refusal), rid: ruling.rid };
  const { event, rid } = ruling;
  const subject = event.subject as NetworkSubject;
  const address = ruling.address as string;
  let upstream;
  try {
    upstream = await connectUpstream(address, subject.port, ctx.limits.connectTimeout);
  } catch (err) {
    const failure = upstreamFailure(err, authority(address, subject.port));
    return { ...refused(socket, plainRefusal(failure.status, failure.reason)), rid };
  }
  const admission = {
    session: ask.session,
    target: event.target,
    rid,
    expiresAt: ctx.pipeline.approvalExpiry(event),
  };
  const untrack = track(ctx, admission);
  try {
    const piped = await relay(
      socket,
      upstream,
      ctx.limits.tunnelIdle,
      { toClient: 'HTTP/1.1 200 Connection Established\r\n\r\n', toUpstream: [] },
      untrack.open,
    );
    return { status: 200, ...piped, rid };
  } finally {
    untrack.close();
  }
}
