import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Verdict } from '../guard/guard.js';
import { hasBody } from './headers.js';

/** A refusal as the agent receives it: status, one-line reason, plain-text body. */
export interface Refusal {
  readonly status: number;
  readonly reason: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Why a held request ended without being sent. */
export type HoldEnd = 'timeout' | 'denied' | 'blocked' | 'shutdown' | 'credentials';

/**
 * 403 for a REVIEW or PAUSE, with `X-Trajgate-Verdict` and a body written for the model that
 * will read it: what was refused, why, and what happens next.
 */
export function verdictRefusal(
  verdict: Exclude<Verdict, 'ALLOW'>,
  boundary: string | null,
  what: string,
  reason: string,
  end: HoldEnd = 'blocked',
): Refusal {
  const lines =
    verdict === 'REVIEW'
      ? [
          `trajgate refused this request: ${what}`,
          `Reason: ${reason}.`,
          'It was not sent, and it has been flagged for a person to review.',
          `Do not retry it or look for another way to reach it: crossing the ${boundary ?? 'same'} boundary again pauses this session until an operator decides.`,
          'If you need this access for your task, say so in your output and continue with other work.',
        ]
      : [
          `trajgate paused this session: ${what} was not sent.`,
          `Reason: ${reason}.`,
          END_TEXT[end],
          'Wait for an operator; do not try other routes, they are held as well.',
        ];
  return {
    status: 403,
    reason: `${verdict}: ${reason}`,
    body: lines.join('\n') + '\n',
    headers: { 'x-trajgate-verdict': `${verdict}; boundary=${boundary ?? 'none'}` },
  };
}

const END_TEXT: Record<HoldEnd, string> = {
  blocked:
    'Every request of this session is refused until an operator reviews the recent events and resumes it.',
  timeout:
    'No operator decided within the hold time. Every request of this session stays held until an operator reviews the recent events and resumes it.',
  denied: 'An operator reviewed the recent events and denied it. The session stays paused.',
  shutdown: 'The gateway is shutting down. The session stays paused after it restarts.',
  credentials:
    'The credentials it was sent with are no longer valid (its agent was removed or its token changed). The session stays paused.',
};

/** Any other refusal (400, 407, 429, 502, 503, 504): the status and a one-line reason. */
export function plainRefusal(
  status: number,
  reason: string,
  headers: Record<string, string> = {},
): Refusal {
  return { status, reason, body: `trajgate: ${reason}\n`, headers };
}

/**
 * Sends a refusal on a request's response. Content not yet read is not read at all: the
 * connection closes after the answer (RFC 9110 § 10.1.1, RFC 9112 § 9.6), so a refused
 * upload is not received, and its bytes can never be parsed as a next request or a second
 * (journaled) error.
 */
export function sendRefusal(res: ServerResponse, refusal: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(refusal.status, {
    ...refusal.headers,
    ...(contentUnread(res.req) ? { connection: 'close' } : {}),
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(refusal.body),
  });
  res.end(refusal.body);
}

/** The same on a raw socket (CONNECT, upgrades, parse errors), then closes it. */
export function writeRawRefusal(socket: Duplex, refusal: Refusal): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const head = [
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? 'Error'}`,
    ...Object.entries(refusal.headers).map(([k, v]) => `${k}: ${v}`),
    'content-type: text/plain; charset=utf-8',
    `content-length: ${Buffer.byteLength(refusal.body)}`,
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${refusal.body}`);
}

/**
 * Handles a parse error on `socket` that belongs to a request already answered, which has its
 * own journal record, so it is neither refused nor journaled again: a response under way is
 * cut (raw bytes would corrupt it); a refusal that left its request's content unread closes
 * the connection once sent. Returns whether it did. Node's own clientError handling reads the
 * same field.
 */
export function dropIfAnswered(socket: Duplex): boolean {
  const res = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!res?.headersSent) return false;
  if (res.writableEnded) return contentUnread(res.req);
  socket.destroy();
  return true;
}

function contentUnread(req: IncomingMessage): boolean {
  return !req.complete && hasBody(req.headers);
}
