import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { NetworkSubject } from '../event/event.js';
import { parseAuthority } from '../event/network-target.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { ProxyContext } from './context.js';
import { heldPresence, PROXY_AUTHENTICATE } from './context.js';
import { clientAddress } from './identity.js';
import { openReadTunnel } from './read-tunnel.js';
import type { TunnelAnswer } from './tunnel-answer.js';
import { CONNECT_ANSWER, via } from './tunnel-answer.js';
import type { RawRequest } from './raw-request.js';
import type { Ended } from './tunnel-track.js';
import { closesBoth, judgeAndConnect, relayTracked, tunnelSlot } from './tunnel-track.js';
import { protocolLook, protocolProblem } from './tunnel-protocol.js';
import { openBlind } from './tunnel-sni.js';
import { sentinelWatch } from './sentinel-watch.js';
import { tunnelCredentials } from './tunnel-credentials.js';

const CONNECT_FORM = 'CONNECT takes an authority, host:port (RFC 9110 § 9.3.6)';

/**
 * `CONNECT host:port`. A tunnel to a host:port that an approval covers as such is judged once
 * and relayed blind. One whose requests must be read to be judged (port 80, a host only
 * method or path patterns allow, or `tls.intercept`) is opened and read: see read-tunnel.ts. Either
 * way the `200` is only sent once the tunnel may open, never while its session is paused, and
 * the tunnel is a flow that follows its session from its judgement on (action/flow-registry).
 */
export async function handleConnect(ctx: ProxyContext, raw: RawRequest): Promise<void> {
  const { req, socket, head, refuse } = raw;
  const client = clientAddress(req.socket.remoteAddress);
  const target = req.url ?? '';
  let subject: NetworkSubject;
  try {
    subject = parseAuthority(target);
  } catch {
    return refuse(400, `${CONNECT_FORM}, not ${JSON.stringify(target.slice(0, 200))}`);
  }
  const who = ctx.identity.fromProxyAuthorization(req.headers['proxy-authorization'], client);
  if (!who.ok) return refuse(407, who.reason, undefined, PROXY_AUTHENTICATE);
  const release = tunnelSlot(ctx, who.session);
  if (typeof release !== 'function') return refuse(release.status, release.reason, who.session);
  if (head.length > 0) socket.unshift(head);
  try {
    const tunnel = { session: who.session, client, target, subject, start: raw.start };
    await openTunnel(ctx, tunnel, socket, CONNECT_ANSWER);
  } finally {
    release();
  }
}

/** A tunnel asked for, once its client is known and it holds a slot. */
export interface TunnelAsk {
  readonly session: string;
  readonly client: string;
  /** `host:port` as the client wrote it: the event's target. */
  readonly target: string;
  readonly subject: NetworkSubject;
  /** performance.now() when it was asked for. */
  readonly start: number;
}

/**
 * Judges and opens a tunnel to `subject` as `CONNECT host:port`, answered on `socket` as
 * `answer` says (CONNECT's HTTP, or SOCKS5), and journals how it ended.
 */
export async function openTunnel(
  ctx: ProxyContext,
  { session, client, target, subject, start }: TunnelAsk,
  socket: Socket,
  answer: TunnelAnswer,
): Promise<void> {
  const plain = subject.port === 80 || ctx.pipeline.readsTunnel(session, target);
  const read = plain || ctx.intercept?.matches(subject) === true;
  const found = tunnelCredentials(ctx.credentials, session, target, subject, !read);
  const ask: NetworkAsk = {
    session,
    source: 'proxy',
    client,
    input: { kind: 'network', target, ...found },
    what: `CONNECT ${target}`,
    connect: true,
    waiting: heldPresence(socket),
  };
  // A sentinel in the target is judged here, as the CONNECT (a read tunnel is judged inside).
  const transfer =
    read && found.exfiltration === undefined
      ? await openReadTunnel(ctx, ask, socket, subject, plain, answer)
      : await blind(ctx, ask, socket, subject, start, answer);
  if (transfer.rid !== null)
    ctx.pipeline.outcome(
      transfer.rid,
      session,
      { ...transfer, ...via(answer) },
      performance.now() - start,
    );
}

async function blind(
  ctx: ProxyContext,
  ask: NetworkAsk,
  socket: Socket,
  subject: NetworkSubject,
  start: number,
  answer: TunnelAnswer,
): Promise<Ended> {
  const connected = await judgeAndConnect(ctx, ask, socket, 'connect', answer);
  if (!('upstream' in connected)) return connected;
  // Closed while its first bytes are awaited: both ends go, nothing is relayed.
  closesBoth(connected.flow, connected.upstream, socket);
  // Sends the 200 and checks the ClientHello's server name before anything is relayed.
  const opened = await openBlind(ctx, ask, socket, subject, connected, start, answer);
  if ('ended' in opened) {
    connected.flow.end();
    return opened.ended;
  }
  const { flow, upstream, rid } = opened.connected;
  const { sni, tls } = opened;
  /** Ends the tunnel before a byte of it was relayed. */
  const unrelayed = (error: string): Ended => {
    upstream.destroy();
    socket.destroy();
    flow.end();
    return {
      status: 200,
      bytesUp: 0,
      bytesDown: 0,
      error,
      rid,
      sni,
      ...(tls && { protocol: 'tls' }),
    };
  };
  const required = ctx.pipeline.tunnelProtocols(ask.session, ask.input.target);
  const { client, session } = ask;
  const refused = (why: string) =>
    ctx.pipeline.refusal(
      { source: 'proxy', client, session, target: ask.input.target, ...via(answer) },
      403,
      why,
    );
  const wrongTls = tls ? protocolProblem(required, 'tls') : null;
  if (wrongTls !== null) {
    refused(wrongTls);
    return unrelayed(wrongTls);
  }
  // The first byte came: relayed only while the session runs.
  if (!flow.live && !(await flow.gate())) return unrelayed(flow.closed ?? '');
  const look = protocolLook(required, refused);
  const opening = { toClient: null, toUpstream: [] };
  const watch = sentinelWatch(ctx, {
    session,
    client,
    target: ask.input.target,
    what: ask.what,
    where: 'tunnel bytes',
    ...via(answer),
  });
  const piped = await relayTracked(ctx, socket, opened.connected, opening, {
    firstUp: tls ? undefined : look,
    watchUp: watch,
  });
  const protocol = tls ? 'tls' : look.seen;
  return { status: 200, ...piped, rid, sni, ...(protocol && { protocol }) };
}
