import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { authority } from '../action/forward.js';
import type { NetworkSubject } from '../event/event.js';
import { parseAuthority } from '../event/network-target.js';
import { openTunnel } from './connect.js';
import type { ProxyContext } from './context.js';
import type { Identified } from './identity.js';
import { clientAddress } from './identity.js';
import { linger, socksAnswer } from './socks-answer.js';
import type { Got } from './socks-negotiation.js';
import { Negotiation } from './socks-negotiation.js';
import type { Bad } from './socks-wire.js';
import {
  NO_ACCEPTABLE,
  NO_AUTH,
  parseCredentials,
  parseGreeting,
  parseRequest,
  REPLY,
  reply,
  SOCKS5,
  USERPASS,
  USERPASS_VERSION,
} from './socks-wire.js';
import { tunnelSlot } from './tunnel-track.js';

/** RFC 1929 § 2: STATUS 0x00 is success; any other value fails and closes. */
const AUTH_OK = Buffer.from([USERPASS_VERSION, 0x00]);
const AUTH_FAILED = Buffer.from([USERPASS_VERSION, 0x01]);

/**
 * The SOCKS5 listener (`listen.socks`): RFC 1928 CONNECT, judged as `CONNECT host:port` on
 * the proxy's path (openTunnel). With `agents`, RFC 1929 username/password is the agent id and
 * token, checked as Proxy-Authorization is; without, no authentication (the client address
 * names the session). Its connections count against `limits.maxConnections` on their own.
 */
export function createSocksServer(ctx: ProxyContext): Server {
  const server = createServer({ noDelay: true });
  let open = 0;
  server.on('connection', (socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const max = ctx.limits.maxConnections;
    if (open >= max) {
      const reason = `${max} SOCKS5 connections are open, limits.maxConnections: retry later, or raise limits.maxConnections`;
      ctx.limitLog.refused('limits.maxConnections', reason);
      socket.destroy();
      return;
    }
    open++;
    socket.once('close', () => open--);
    const handled = serveSocks(ctx, socket, performance.now());
    ctx.drain.track('tunnel', handled);
    handled.catch((err: unknown) => {
      ctx.log.error({ err }, 'socks: connection failed');
      socket.destroy();
    });
  });
  return server;
}

/** What a refusal before judging names: the session once known, the target and command. */
interface Named {
  session?: string;
  target?: string;
  method?: string;
}

async function serveSocks(ctx: ProxyContext, socket: Socket, start: number): Promise<void> {
  const client = clientAddress(socket.remoteAddress);
  const talk = new Negotiation(socket, ctx.limits.headerTimeout);
  const named: Named = {};
  /** Journaled as the proxy journals a refusal before judging; `answer` sent, then closed. */
  const refuse = (status: number, reason: string, answer: Buffer | null) => {
    talk.finish();
    ctx.pipeline.refusal({ source: 'proxy', client, via: 'socks', ...named }, status, reason);
    if (answer === null) return void socket.destroy();
    socket.end(answer);
    linger(socket);
  };
  /** A message that did not come whole: journaled unless nothing at all was sent. */
  const failed = (
    what: string,
    got: Exclude<Got<unknown>, { kind: 'ok' }>,
    answer: (b: Bad) => Buffer,
  ) => {
    if (got.kind === 'timeout')
      return refuse(
        408,
        `no whole SOCKS5 ${what} within ${ctx.limits.headerTimeout} ms (limits.headerTimeout)`,
        null,
      );
    if (got.kind === 'closed') {
      if (socket.bytesRead === 0) {
        talk.finish();
        return void socket.destroy();
      }
      return refuse(
        400,
        `the client closed the connection in the middle of its SOCKS5 ${what}`,
        null,
      );
    }
    Object.assign(named, got.target === undefined ? {} : { target: got.target });
    Object.assign(named, got.method === undefined ? {} : { method: got.method });
    return refuse(got.status, got.reason, answer(got));
  };
  const greeting = await talk.read(parseGreeting);
  if (greeting.kind !== 'ok')
    return failed('greeting', greeting, () => Buffer.from([SOCKS5, NO_ACCEPTABLE]));
  const method = chooseMethod(greeting.value, ctx.identity.required);
  if (method === NO_ACCEPTABLE)
    return refuse(
      407,
      'proxy credentials required (agent id and token): the SOCKS5 client offers no username/password authentication (RFC 1929)',
      Buffer.from([SOCKS5, NO_ACCEPTABLE]),
    );
  socket.write(Buffer.from([SOCKS5, method]));
  let who: Identified = ctx.identity.fromProxyAuthorization(undefined, client);
  if (method === USERPASS) {
    const creds = await talk.read(parseCredentials);
    if (creds.kind !== 'ok') return failed('username/password', creds, () => AUTH_FAILED);
    who = ctx.identity.fromUserPassword(creds.value.user, creds.value.password, client);
  }
  if (!who.ok) return refuse(407, who.reason, AUTH_FAILED);
  named.session = who.session;
  if (method === USERPASS) socket.write(AUTH_OK);
  const request = await talk.read(parseRequest);
  if (request.kind !== 'ok') return failed('request', request, (b) => reply(b.reply));
  talk.finish();
  named.target = `${request.value.host}:${request.value.port}`;
  named.method = 'CONNECT';
  let subject: NetworkSubject;
  try {
    subject = parseAuthority(named.target);
  } catch (err) {
    return refuse(400, (err as Error).message, reply(REPLY.failure));
  }
  // The client wrote no text: the event's target is the canonical `host:port`.
  const target = authority(subject.host, subject.port);
  const release = tunnelSlot(ctx, who.session);
  if (typeof release !== 'function')
    return refuse(release.status, release.reason, reply(REPLY.failure));
  try {
    const tunnel = { session: who.session, client, target, subject, start };
    await openTunnel(ctx, tunnel, socket, socksAnswer(subject.port));
  } finally {
    release();
  }
}

/**
 * RFC 1928 § 3: the server picks one of the client's methods. With agents only
 * username/password will do; without, no authentication, or username/password (its
 * credentials are then not needed, as Proxy-Authorization is not).
 */
function chooseMethod(offered: ReadonlySet<number>, required: boolean): number {
  if (!required && offered.has(NO_AUTH)) return NO_AUTH;
  return offered.has(USERPASS) ? USERPASS : NO_ACCEPTABLE;
}
