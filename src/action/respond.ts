import type { AgentAnswer, AnsweredRequest } from '../http/agent-message.js';
import { STATUS_CODES } from 'node:http';
import { constants } from 'node:http2';
import type { Http2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import { isGrpcCall, sendGrpcRefusal } from './grpc.js';
import { hasBody } from './headers.js';
import type { HttpRefusal, Refusal } from './refusal.js';
import { refusalText } from './refusal.js';

/**
 * The proxy's and the bridge's HTTP rendering of a refusal: a verdict's 403 carries
 * `X-Trajgate-Verdict: REVIEW; boundary=network`; `headers`: the transport's own (a 407's
 * Proxy-Authenticate, RFC 9110 § 11.7.1).
 */
export function httpRefusal(
  refusal: Refusal,
  headers: Readonly<Record<string, string>> = {},
): HttpRefusal {
  const { verdict, boundary, status } = refusal;
  return {
    status,
    headers:
      verdict === null
        ? headers
        : { 'x-trajgate-verdict': `${verdict}; boundary=${boundary ?? 'none'}`, ...headers },
    body: refusalText(refusal),
  };
}

/**
 * Sends a refusal on a request's response. Content not yet read is not read at all: the
 * connection closes after the answer (RFC 9110 § 10.1.1, RFC 9112 § 9.6), so a refused
 * upload is not received, and its bytes can never be parsed as a next request or a second
 * (journaled) error. A gRPC call gets it as its gRPC status (action/grpc.ts).
 */
export function sendRefusal(
  res: AgentAnswer,
  decided: Refusal,
  headers?: Readonly<Record<string, string>>,
): void {
  if (isGrpcCall(res.req)) return sendGrpcRefusal(res, httpRefusal(decided, headers));
  if (res.headersSent) return cutAnswer(res);
  const refusal = httpRefusal(decided, headers);
  res.writeHead(refusal.status, {
    ...refusal.headers,
    ...(contentUnread(res.req) ? { connection: 'close' } : {}),
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(refusal.body),
  });
  res.end(refusal.body);
}

/**
 * Cuts an answer already under way so that the agent cannot take it for a whole one: an HTTP/2
 * stream is reset with CANCEL (Node's destroy resets it with NO_ERROR, which says nothing went
 * wrong, RFC 9113 § 8.1), an HTTP/1.1 connection is closed.
 */
export function cutAnswer(res: AgentAnswer): void {
  const stream = (res as unknown as { stream?: Http2Stream }).stream;
  if (res.req.httpVersionMajor === 2 && stream !== undefined)
    stream.close(constants.NGHTTP2_CANCEL);
  else res.destroy();
}

/** The same on a raw socket (CONNECT, upgrades, parse errors), then closes it. */
export function writeRawRefusal(
  socket: Duplex,
  decided: Refusal,
  headers?: Readonly<Record<string, string>>,
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const refusal = httpRefusal(decided, headers);
  const head = [
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? 'Error'}`,
    // It always closes: a Connection field given with the refusal is not written twice.
    ...Object.entries(refusal.headers)
      .filter(([k]) => k.toLowerCase() !== 'connection')
      .map(([k, v]) => `${k}: ${v}`),
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
  const res = (socket as Duplex & { _httpMessage?: AgentAnswer | null })._httpMessage;
  if (!res?.headersSent) return false;
  if (res.writableEnded) return contentUnread(res.req);
  socket.destroy();
  return true;
}

/**
 * Content left unread closes an HTTP/1.1 connection; an HTTP/2 stream ends by itself and
 * Connection is not a field there (RFC 9113 § 8.2.2).
 */
function contentUnread(req: AnsweredRequest): boolean {
  return req.httpVersionMajor < 2 && !req.complete && hasBody(req);
}
