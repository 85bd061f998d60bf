import type { AgentHead } from '../http/agent-message.js';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { authority } from '../action/forward.js';
import type { Flow, FlowKind } from '../action/flows.js';
import type { Refusal } from '../action/refusal.js';
import { plainRefusal, refusalLine } from '../action/refusal.js';
import { writeRawRefusal } from '../action/respond.js';
import type { Transfer } from '../action/transfer.js';
import { upstreamFailure } from '../action/transfer.js';
import type { Opening, RelayOptions } from '../action/tunnel.js';
import { connectUpstream, relay } from '../action/tunnel.js';
import type { Event } from '../event/event.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { ProxyContext } from './context.js';
import { earlyRefusal } from './context.js';
import { closedWhileHeld } from './http.js';
import type { RawRefuser } from './raw-request.js';
import type { TunnelAnswer } from './tunnel-answer.js';
import { CONNECT_ANSWER } from './tunnel-answer.js';

/** A transfer and the request id its outcome belongs to. */
export type Ended = Transfer & { readonly rid: number | null };

export function rawRefuser(ctx: ProxyContext, req: AgentHead, socket: Duplex): RawRefuser {
  return (status, reason, session, headers) =>
    writeRawRefusal(socket, earlyRefusal(ctx, req, status, reason, session), headers);
}

export function refused(
  socket: Duplex,
  refusal: Refusal,
  answer: TunnelAnswer = CONNECT_ANSWER,
  cause?: unknown,
): Transfer {
  answer.refuse(socket, refusal, cause);
  return { status: refusal.status, bytesUp: 0, bytesDown: 0, error: refusalLine(refusal) };
}

/** A held tunnel whose client left: whatever is left of its socket goes too. */
export function gone(socket: Duplex, rid: number | null): Ended {
  socket.destroy();
  return { ...closedWhileHeld, rid };
}

/** Why a tunnel got no slot: the status it is answered, and the reason. */
export interface NoSlot {
  readonly status: number;
  readonly reason: string;
}

/**
 * Takes a slot of `limits.maxTunnels` and one of the session's `limits.tunnelsPerSession`:
 * returns its release, or why none is free (counted and logged as a refusal at that limit). A
 * full gateway is 503 (it may free up); a session with all of its own open is 429 (RFC 6585).
 */
export function tunnelSlot(ctx: ProxyContext, session: string): (() => void) | NoSlot {
  const { tunnels, limits } = ctx;
  const open = tunnels.bySession.get(session) ?? 0;
  if (open >= limits.tunnelsPerSession) {
    const reason = `too many open tunnels for this session (limit ${limits.tunnelsPerSession}): close one, or raise limits.tunnelsPerSession`;
    ctx.limitLog.refused('limits.tunnelsPerSession', `session ${session}: ${reason}`);
    return { status: 429, reason };
  }
  if (tunnels.total >= limits.maxTunnels) {
    const reason = `${limits.maxTunnels} tunnels are open, limits.maxTunnels: retry later, or raise limits.maxTunnels`;
    ctx.limitLog.refused('limits.maxTunnels', reason);
    return { status: 503, reason };
  }
  tunnels.bySession.set(session, open + 1);
  tunnels.total++;
  return () => {
    tunnels.total--;
    const left = (tunnels.bySession.get(session) ?? 1) - 1;
    if (left === 0) tunnels.bySession.delete(session);
    else tunnels.bySession.set(session, left);
  };
}

/** A forwarded request's connection to the address its judgement checked. */
export interface Connected {
  readonly event: Event;
  readonly rid: number;
  readonly upstream: Socket;
  /** The upstream's authority, for reasons. */
  readonly name: string;
  /** The channel, registered from its judgement on (action/flow-registry). */
  readonly flow: Flow;
}

/**
 * Judges `ask` and connects to the checked address; the flow is registered from the judgement
 * on, so a pause, deny, revoke or reload while connecting reaches it, and it starts relaying
 * only while its session runs. A refusal, a client that left while held, a flow closed while
 * opening (403) or an upstream that cannot be reached or whose certificate does not verify
 * (502/504) ends here, answered on `socket`. With `tls` the connection is TLS (an upgrade
 * inside intercepted TLS).
 */
export async function judgeAndConnect(
  ctx: ProxyContext,
  ask: NetworkAsk,
  socket: Socket,
  kind: FlowKind,
  answer: TunnelAnswer = CONNECT_ANSWER,
  tls?: ConnectionOptions,
): Promise<Connected | Ended> {
  const ruling = await ctx.pipeline.judge(ask);
  if (ruling.kind === 'gone') return gone(socket, ruling.rid);
  if (ruling.kind === 'refuse')
    return { ...refused(socket, ruling.refusal, answer), rid: ruling.rid };
  const { event, rid } = ruling;
  const flow = ctx.pipeline.flow(kind, ruling);
  const { address, port } = ruling.dial;
  const name = authority(address, port);
  let upstream: Socket;
  try {
    upstream = await connectUpstream(address, port, ctx.limits.connectTimeout, flow, tls);
  } catch (err) {
    if (flow.closed !== null) return closedWhileOpening(socket, flow, answer);
    flow.end();
    // Unreachable: the request was let through and failed upstream.
    const failure = upstreamFailure(err, name);
    const transfer = refused(socket, plainRefusal(failure.status, failure.reason), answer, err);
    return { ...transfer, failed: true, rid };
  }
  if (!flow.live && !(await flow.gate())) {
    upstream.destroy();
    return closedWhileOpening(socket, flow, answer);
  }
  return { event, rid, upstream, name, flow };
}

/** Until the relay takes over, a close of `flow` ends both sides (nothing was relayed yet). */
export function closesBoth(flow: Flow, upstream: Socket, client: Socket): void {
  flow.attach({
    freeze: () => undefined,
    thaw: () => undefined,
    close: () => {
      upstream.destroy();
      client.destroy();
    },
  });
}

/** A flow closed before it relayed a byte: its client is answered 403 with the reason. */
export function closedWhileOpening(
  socket: Socket,
  flow: Flow,
  answer: TunnelAnswer = CONNECT_ANSWER,
): Ended {
  flow.end();
  const reason = `trajgate closed this request before it was relayed: ${flow.closed ?? ''}`;
  return { ...refused(socket, plainRefusal(403, reason), answer), rid: flow.basis.rid };
}

/**
 * Relays an admitted tunnel as its flow: frozen, thawed and closed with its session, its bytes
 * sent up counted as they flow (volume rules), looked at as `looks` says.
 */
export async function relayTracked(
  ctx: ProxyContext,
  socket: Socket,
  { upstream, flow }: Connected,
  opening: Opening,
  looks: Pick<RelayOptions, 'firstUp' | 'watchUp'> = {},
): Promise<Omit<Transfer, 'status'>> {
  try {
    return await relay(
      socket,
      upstream,
      ctx.limits.tunnelIdle,
      opening,
      (control) => flow.attach(control),
      { onUp: (n) => flow.up(n), ...looks },
    );
  } finally {
    flow.end();
  }
}
