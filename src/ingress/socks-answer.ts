import type { Duplex } from 'node:stream';
import type { Refusal } from '../action/refusal.js';
import { refusalText } from '../action/refusal.js';
import { errnoCode } from '../errors.js';
import { REPLY, reply } from './socks-wire.js';
import type { TunnelAnswer } from './tunnel-answer.js';

/** Where an SSH client is assumed: its refusals are told as SSH (sshRefusal). */
const SSH_PORT = 22;
/** How long a refused client's unread bytes are drained so its answer is not lost to a reset. */
const LINGER_MS = 2_000;
/** RFC 4250 § 4.2.2: SSH_DISCONNECT_HOST_NOT_ALLOWED_TO_CONNECT. */
const HOST_NOT_ALLOWED = 1;
/** RFC 4253 § 12: SSH_MSG_DISCONNECT. */
const MSG_DISCONNECT = 1;

/**
 * SOCKS5's answer to a tunnel to `port`: a success reply naming where trajgate connected from,
 * or a refusal's code (RFC 1928 § 6). A SOCKS reply carries no text, so a refused tunnel to
 * port 22 is answered as an SSH server that refuses: the ssh client prints the reason.
 */
export function socksAnswer(port: number): TunnelAnswer {
  return {
    via: 'socks',
    open: (socket, upstream) =>
      new Promise((resolve) => {
        const bound = { address: upstream?.localAddress, port: upstream?.localPort };
        socket.write(reply(REPLY.succeeded, bound), () => resolve());
      }),
    refuse: (socket, refusal, cause) => {
      if (port === SSH_PORT) sshRefusal(socket, refusal);
      else socket.end(reply(replyCode(refusal, cause)));
      linger(socket);
    },
  };
}

/** The RFC 1928 § 6 code closest to a refusal: its upstream's error, else its status. */
export function replyCode(refusal: Refusal, cause?: unknown): number {
  const code = errnoCode(cause);
  if (code === 'ECONNREFUSED') return REPLY.refused;
  if (code === 'ENETUNREACH') return REPLY.networkUnreachable;
  if (refusal.status === 502 || refusal.status === 504) return REPLY.hostUnreachable;
  if (refusal.status === 403) return REPLY.notAllowed;
  return REPLY.failure;
}

/**
 * A tunnel opened to tell an SSH client why it is refused: the SOCKS success, then an SSH
 * server's version line and, before any key exchange (its packets are plain then, RFC 4253
 * § 6: no cipher, no MAC), SSH_MSG_DISCONNECT with the reason (§ 11.1). OpenSSH prints it:
 * `Received disconnect from … : <reason>`. The refusal's text is one line there.
 */
function sshRefusal(socket: Duplex, refusal: Refusal): void {
  const text = Buffer.from(
    refusalText(refusal)
      .trim()
      .replace(/\s*\n\s*/g, ' '),
    'utf8',
  );
  const payload = Buffer.alloc(1 + 4 + 4 + text.length + 4);
  payload[0] = MSG_DISCONNECT;
  payload.writeUInt32BE(HOST_NOT_ALLOWED, 1);
  payload.writeUInt32BE(text.length, 5);
  text.copy(payload, 9);
  // The language tag (the last 4 bytes) is empty.
  // RFC 4253 § 6: 4..255 bytes of padding, the whole packet a multiple of 8.
  const pad = 4 + ((8 - ((5 + payload.length + 4) % 8)) % 8);
  const packet = Buffer.alloc(5 + payload.length + pad);
  packet.writeUInt32BE(1 + payload.length + pad, 0);
  packet[4] = pad;
  payload.copy(packet, 5);
  socket.write(reply(REPLY.succeeded));
  socket.write('SSH-2.0-trajgate\r\n');
  socket.end(packet);
}

/** What the client sends meanwhile is read and dropped, so a reset does not lose the answer. */
export function linger(socket: Duplex): void {
  socket.on('error', () => socket.destroy());
  socket.resume();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
