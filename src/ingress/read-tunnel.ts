import type { Socket } from 'node:net';
import type { Flow } from '../action/flows.js';
import { socketControl } from '../action/flow-registry.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { NetworkSubject } from '../event/event.js';
import type { ProxyContext } from './context.js';
import { tunnelRefusal } from './context.js';
import type { Tunnel } from './tunnel-names.js';
import type { TunnelAnswer } from './tunnel-answer.js';
import { via } from './tunnel-answer.js';
import type { Ended } from './tunnel-track.js';
import { closedWhileOpening, gone, refused } from './tunnel-track.js';

/** The first byte of a TLS handshake record (RFC 8446 § 5.1: ContentType handshake). */
const TLS_HANDSHAKE = 0x16;
/** An HTTP/1.x request line starts with a method: a token (RFC 9110 § 5.6.2). */
const TOKEN_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]$/;

/**
 * A CONNECT whose requests trajgate must read to judge: port 80, a host only method or path
 * patterns allow (undici sends `http://` URLs through CONNECT, where a blind tunnel would hide
 * them), or a host in `tls.intercept`. Held while the session is paused, then answered `200`,
 * and its first bytes decide: an HTTP/1.x request line → every request in it is judged as plain
 * HTTP is; a TLS ClientHello → intercepted when `tls.intercept` covers the host, else closed;
 * anything else → closed. Each closing is journaled.
 */
export async function openReadTunnel(
  ctx: ProxyContext,
  ask: NetworkAsk,
  socket: Socket,
  subject: NetworkSubject,
  plain: boolean,
  answer: TunnelAnswer,
): Promise<Ended> {
  const admitted = await ctx.pipeline.admitTunnel(ask);
  if (admitted.kind === 'gone') return gone(socket, admitted.rid);
  if (admitted.kind === 'refuse')
    return { ...refused(socket, admitted.refusal, answer), rid: admitted.rid };
  const rid = admitted.rid;
  const intercepted = ctx.intercept?.matches(subject) === true;
  const kind = intercepted ? 'intercepted' : 'read';
  const flow = ctx.pipeline.sessionFlow(kind, ask.session, ask.input.target, rid);
  try {
    return await readTunnel(ctx, ask, socket, subject, plain, flow, answer);
  } finally {
    flow.end();
  }
}

async function readTunnel(
  ctx: ProxyContext,
  ask: NetworkAsk,
  socket: Socket,
  subject: NetworkSubject,
  plain: boolean,
  flow: Flow,
  answer: TunnelAnswer,
): Promise<Ended> {
  const rid = flow.basis.rid;
  // The `200` and every byte after it only while the session runs.
  if (!flow.live && !(await flow.gate())) return closedWhileOpening(socket, flow, answer);
  void answer.open(socket, null);
  const tunnel: Tunnel = {
    session: ask.session,
    client: ask.client,
    host: subject.host,
    port: subject.port,
    scheme: 'http',
    ...via(answer),
  };
  const intercepted = flow.basis.kind === 'intercepted';
  // Only TLS is expected where no plain request could be allowed: no need to wait and look.
  const first = plain ? await firstByte(socket, ctx.limits.headerTimeout) : TLS_HANDSHAKE;
  const close = (status: number, reason: string): Ended => {
    tunnelRefusal(ctx, tunnel, status, reason);
    socket.destroy();
    return {
      status,
      bytesUp: socket.bytesRead,
      bytesDown: socket.bytesWritten,
      error: reason,
      rid,
    };
  };
  if (first === 'closed') {
    return { status: 200, bytesUp: socket.bytesRead, bytesDown: socket.bytesWritten, rid };
  }
  if (first === 'timeout') {
    return close(408, `nothing sent through the tunnel within ${ctx.limits.headerTimeout} ms`);
  }
  if (!flow.live && !(await flow.gate())) {
    socket.destroy();
    return { status: 200, bytesUp: socket.bytesRead, bytesDown: socket.bytesWritten, rid };
  }
  const http = TOKEN_START.test(String.fromCharCode(first));
  if (!http && intercepted && ctx.intercept !== null) {
    // Anything but a request line goes to the handshake, which names what is wrong with it.
    const piped = await ctx.intercept.open(socket, { ...tunnel, scheme: 'https' }, (control) =>
      flow.attach(control),
    );
    return { status: 200, ...piped, rid };
  }
  if (first === TLS_HANDSHAKE) {
    return close(
      403,
      `TLS to ${ask.input.target} cannot be judged: method or path patterns (allow, approvals or network.deny) decide for this host, and they can only be checked on plain HTTP or intercepted TLS (tls.intercept)`,
    );
  }
  if (!http) {
    return close(400, 'the tunnel carries neither HTTP/1.x nor TLS, so it cannot be judged');
  }
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  ctx.inner.serve(socket, tunnel);
  flow.attach(socketControl(socket));
  await closed;
  return { status: 200, bytesUp: socket.bytesRead, bytesDown: socket.bytesWritten, rid };
}

/** The first byte the client sends through the tunnel (left unread), or why none came. */
function firstByte(socket: Socket, ms: number): Promise<number | 'timeout' | 'closed'> {
  return new Promise((resolve) => {
    const done = (result: number | 'timeout' | 'closed') => {
      clearTimeout(timer);
      socket.off('readable', readable);
      socket.off('close', gone);
      socket.off('end', gone);
      resolve(result);
    };
    const readable = () => {
      const chunk = socket.read() as Buffer | null;
      if (chunk === null || chunk.length === 0) return;
      socket.unshift(chunk);
      done(chunk[0] as number);
    };
    const gone = () => done('closed');
    const timer = setTimeout(() => done('timeout'), ms);
    socket.on('readable', readable);
    socket.once('close', gone);
    socket.once('end', gone);
    if (socket.destroyed) gone();
    else readable();
  });
}
