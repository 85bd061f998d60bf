import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { authority } from '../action/forward.js';
import { upstreamRequestHeaders } from '../action/headers.js';
import type { Refusal } from '../action/respond.js';
import { plainRefusal, writeRawRefusal } from '../action/respond.js';
import type { Transfer } from '../action/transfer.js';
import { upstreamFailure } from '../action/transfer.js';
import { connectUpstream, relay } from '../action/tunnel.js';
import type { Ruling } from '../pipeline.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal, presence, PROXY_AUTHENTICATE } from './context.js';
import { closedWhileHeld } from './http.js';
import { clientAddress } from './identity.js';

/**
 * Raw-socket requests: CONNECT tunnels and HTTP upgrades. Both identify the agent, are judged
 * like any request, and on ALLOW are spliced byte for byte to the checked address. For CONNECT
 * the `200` is only sent once the upstream connection is open, and never while held.
 */
export async function handleRaw(
  ctx: ProxyContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  mode: 'connect' | 'upgrade',
): Promise<void> {
  const start = performance.now();
  socket.on('error', () => socket.destroy());
  const client = clientAddress(req.socket.remoteAddress);
  const target = req.url ?? '';
  const method = req.method ?? 'CONNECT';
  const refuse = (
    status: number,
    reason: string,
    session?: string,
    headers?: Record<string, string>,
  ) => writeRawRefusal(socket, earlyRefusal(ctx, req, status, reason, session, headers));
  let url: URL | null = null;
  if (mode === 'upgrade') {
    url = URL.canParse(target) ? new URL(target) : null;
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'ws:')) {
      return refuse(400, 'an upgrade through the proxy needs an absolute http:// or ws:// URL');
    }
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
  try {
    const ruling = await ctx.pipeline.judge({
      session: who.session,
      source: 'proxy',
      client,
      input: mode === 'connect' ? { kind: 'network', target } : { kind: 'network', target, method },
      what: `${method} ${target}`,
      connect: mode === 'connect',
      waiting: presence(socket),
    });
    const transfer = await act(ctx, ruling, socket, head, req, url);
    if (ruling.rid !== null)
      ctx.pipeline.outcome(ruling.rid, who.session, transfer, performance.now() - start);
  } finally {
    const left = (ctx.tunnels.get(who.session) ?? 1) - 1;
    if (left === 0) ctx.tunnels.delete(who.session);
    else ctx.tunnels.set(who.session, left);
  }
}

async function act(
  ctx: ProxyContext,
  ruling: Ruling,
  socket: Duplex,
  head: Buffer,
  req: IncomingMessage,
  url: URL | null,
): Promise<Transfer> {
  if (ruling.kind === 'gone') return closedWhileHeld;
  if (ruling.kind === 'refuse') return refused(socket, ruling.refusal);
  const subject = ruling.event.subject;
  const port = subject.type === 'network' ? subject.port : 0;
  const address = ruling.address as string;
  let upstream;
  try {
    upstream = await connectUpstream(address, port, ctx.limits.connectTimeout);
  } catch (err) {
    const failure = upstreamFailure(err, authority(address, port));
    return refused(socket, plainRefusal(failure.status, failure.reason));
  }
  const opening =
    url === null
      ? { toClient: 'HTTP/1.1 200 Connection Established\r\n\r\n', toUpstream: [head] }
      : { toClient: null, toUpstream: [upgradeHead(req, url), head] };
  const piped = await relay(socket as Socket, upstream, ctx.limits.tunnelIdle, opening);
  // An upgrade's status is the upstream's own, spliced through unread.
  return { status: url === null ? 200 : null, ...piped };
}

function refused(socket: Duplex, refusal: Refusal): Transfer {
  writeRawRefusal(socket, refusal);
  return { status: refusal.status, bytesUp: 0, bytesDown: 0, error: refusal.reason };
}

/** The upgrade request as the upstream receives it: origin-form, hop-by-hop fields but the
 * upgrade's own removed (RFC 9110 § 7.8), credentials for trajgate never included. */
function upgradeHead(req: IncomingMessage, url: URL): string {
  const fields = upstreamRequestHeaders(req.rawHeaders, url.host, UPGRADE_FIELDS);
  let head = `${req.method ?? 'GET'} ${url.pathname}${url.search} HTTP/1.1\r\n`;
  for (let i = 0; i < fields.length; i += 2) head += `${fields[i]}: ${fields[i + 1]}\r\n`;
  return head + '\r\n';
}

const UPGRADE_FIELDS: ReadonlySet<string> = new Set(['connection', 'upgrade']);
