import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { authority } from '../action/forward.js';
import { plainRefusal, refusalLine } from '../action/refusal.js';
import { CREDENTIAL_EXFILTRATION } from '../guard/exfiltration.js';
import type { NetworkSubject } from '../event/event.js';
import { canonicalHost } from '../event/network-target.js';
import type { NetworkAsk } from '../pipeline/ruling.js';
import type { Hello } from '../tls/client-hello.js';
import { BUFFER_MAX, readClientHello } from './client-hello-read.js';
import type { ProxyContext } from './context.js';
import { heldPresence } from './context.js';
import type { TunnelAnswer } from './tunnel-answer.js';
import { via } from './tunnel-answer.js';
import type { Connected, Ended } from './tunnel-track.js';
import { closesBoth, gone } from './tunnel-track.js';
import { sentinelIn } from './sentinel-watch.js';

/** RFC 8446 § 6.2 fatal alerts, what a TLS client understands once its hello is sent. */
const ACCESS_DENIED = 49;
const DECODE_ERROR = 50;
/** How long a refused client's unread bytes are drained so the alert is not lost to a reset. */
const LINGER_MS = 2_000;

/**
 * A blind tunnel ready to relay (`connected` is the basis it relays under; `tls`: its client
 * began with a ClientHello), or how it ended.
 */
export type Opened =
  | { readonly connected: Connected; readonly sni: string | null; readonly tls: boolean }
  | { readonly ended: Ended };

/**
 * A blind tunnel may carry TLS that names another server than its CONNECT host: on a shared
 * front end that reaches the other server (domain fronting). So after the `200` its ClientHello
 * is read before a byte is relayed (within `limits.headerTimeout`): a server name that is the
 * CONNECT host (compared canonically) opens the tunnel; another name is judged as
 * `CONNECT name:port` itself, and the tunnel opens under that decision or is refused by it. A
 * hello that cannot be read or judged is refused, and so is anything but TLS on port 443. An
 * upstream that speaks first (SMTP, SSH banners) shows the tunnel is not TLS from the client:
 * it is relayed as before.
 */
export async function openBlind(
  ctx: ProxyContext,
  ask: NetworkAsk,
  socket: Socket,
  subject: NetworkSubject,
  connected: Connected,
  start: number,
  answer: TunnelAnswer,
): Promise<Opened> {
  const written = answer.open(socket, connected.upstream);
  const first = await readClientHello(socket, connected.upstream, ctx.limits.headerTimeout);
  await written;
  const { rid, upstream } = connected;
  const refuse = (
    status: number,
    reason: string,
    alert: number | null,
    sni: string | null,
    ended: number | null = rid,
  ) => {
    upstream.destroy();
    if (alert === null) socket.destroy();
    else {
      socket.end(Buffer.from([0x15, 3, 3, 0, 2, 2, alert]));
      socket.resume();
      socket.setTimeout(LINGER_MS, () => socket.destroy());
    }
    return { ended: { status, bytesUp: 0, bytesDown: 0, error: reason, rid: ended, sni } };
  };
  const journaled = (status: number, reason: string, alert: number | null) => {
    const { client, session } = ask;
    ctx.pipeline.refusal(
      { source: 'proxy', client, session, target: ask.input.target, ...via(answer) },
      status,
      reason,
    );
    return refuse(status, reason, alert, null);
  };
  switch (first.kind) {
    case 'closed':
      upstream.destroy();
      socket.destroy();
      return { ended: { status: 200, bytesUp: 0, bytesDown: 0, rid, sni: null } };
    case 'timeout':
      return journaled(
        408,
        `no TLS ClientHello through the tunnel within ${ctx.limits.headerTimeout} ms`,
        null,
      );
    case 'server-first':
      return { connected, sni: null, tls: false };
    case 'not-tls':
      if (subject.port !== 443) return { connected, sni: null, tls: false };
      return journaled(
        400,
        'a tunnel to port 443 must carry TLS: its first bytes are not a TLS ClientHello',
        null,
      );
    case 'more':
    case 'malformed':
      return journaled(
        400,
        `the TLS ClientHello cannot be read: ${helloReason(first)}`,
        DECODE_ERROR,
      );
    case 'unjudgeable':
      return journaled(403, `the TLS ClientHello cannot be judged: ${first.reason}`, ACCESS_DENIED);
  }
  if (first.sni === null) return { connected, sni: null, tls: true };
  const sni = first.sni;
  // A server name spelling a sentinel (`tgs_github_….evil.test`) leaks it to every resolver.
  const exfiltration = sentinelIn(ctx.credentials, sni, 'SNI');
  if (exfiltration !== undefined) {
    const ruling = await ctx.pipeline.judge({
      ...ask,
      input: { ...ask.input, exfiltration },
      what: `${ask.what} (the TLS server name ${sni})`,
      waiting: heldPresence(socket),
    });
    // The CONNECT's own event opened the tunnel: it ends here, unrelayed.
    ctx.pipeline.outcome(
      rid,
      ask.session,
      { status: 200, bytesUp: 0, bytesDown: 0, sni, ...via(answer) },
      performance.now() - start,
    );
    if (ruling.kind === 'gone') {
      upstream.destroy();
      return { ended: { ...gone(socket, ruling.rid), sni } };
    }
    // Never forwarded: a sentinel out of place pauses, and its request is refused.
    const refusal =
      ruling.kind === 'refuse' ? ruling.refusal : plainRefusal(403, CREDENTIAL_EXFILTRATION);
    return refuse(refusal.status, refusalLine(refusal), ACCESS_DENIED, sni, ruling.rid);
  }
  let host: string;
  try {
    host = canonicalHost(sni);
  } catch {
    return journaled(
      400,
      `the TLS server name ${JSON.stringify(sni)} is not a host name`,
      DECODE_ERROR,
    );
  }
  if (host === subject.host) return { connected, sni, tls: true };
  const target = authority(host, subject.port);
  const ruling = await ctx.pipeline.judge({
    ...ask,
    input: { kind: 'network', target },
    what: `CONNECT ${target} (the TLS server name in a tunnel to ${ask.input.target})`,
    waiting: heldPresence(socket),
  });
  if (ruling.kind === 'gone') {
    upstream.destroy();
    return { ended: { ...gone(socket, rid), sni } };
  }
  if (ruling.kind === 'refuse') {
    const why = `TLS in the tunnel names ${sni}, not ${subject.host}: ${refusalLine(ruling.refusal)}`;
    return refuse(ruling.refusal.status, why, ACCESS_DENIED, sni);
  }
  // The tunnel goes on as the name it carries: its bytes and its basis are that event's.
  ctx.pipeline.outcome(
    rid,
    ask.session,
    { status: 200, bytesUp: 0, bytesDown: 0, sni, ...via(answer) },
    performance.now() - start,
  );
  // Its flow follows that event from now on, to the address already connected.
  connected.flow.end();
  const flow = ctx.pipeline.flow('connect', {
    ...ruling,
    dial: connected.flow.basis.dial ?? ruling.dial,
  });
  closesBoth(flow, upstream, socket);
  return {
    connected: { ...connected, event: ruling.event, rid: ruling.rid, flow },
    sni,
    tls: true,
  };
}

const helloReason = (h: Hello): string =>
  h.kind === 'malformed' || h.kind === 'unjudgeable' ? h.reason : `larger than ${BUFFER_MAX} bytes`;
