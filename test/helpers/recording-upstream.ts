import type { Socket } from 'node:net';
import type { TcpServer } from './raw.js';
import { startTcpServer } from './raw.js';

/** One request as the upstream received it: its exact bytes, framed as sent. */
export interface RecordedRequest {
  /** The first line's target (`/case/name`). */
  readonly path: string;
  /** Head and body bytes as they arrived (latin1). */
  bytes: string;
  /** It came on a connection that had carried a request before. */
  readonly reused: boolean;
}

/** What a script is given: the connection, the request's head, whether the connection is reused. */
export interface Ask {
  readonly socket: Socket;
  readonly head: string;
  readonly reused: boolean;
}

/**
 * How the upstream answers one path: `answer` once the whole request arrived (or, `early`, once
 * its head did). It writes raw bytes on the socket, closes or resets it, or does nothing.
 */
export interface Script {
  readonly answer: (ask: Ask) => void;
  readonly early?: boolean;
}

export interface RecordingUpstream extends TcpServer {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
}

/**
 * A raw TCP upstream on loopback port 0 that records the exact bytes of each request (framed by
 * its Content-Length or chunked coding, RFC 9112 § 6) and answers each as `scripts` says for its
 * path (404 for an unknown one). Any number of requests per connection, one at a time.
 */
export async function startRecordingUpstream(
  scripts: Readonly<Record<string, Script>>,
): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const tcp = await startTcpServer((socket) => {
    let buffered = '';
    let served = 0;
    let current: { record: RecordedRequest; left: (data: string) => number } | null = null;
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => {
      buffered += data;
      for (;;) {
        if (current === null) {
          const end = buffered.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buffered.slice(0, end + 4);
          buffered = buffered.slice(end + 4);
          const path = head.split(' ')[1] ?? '';
          const record = { path, bytes: head, reused: served++ > 0 };
          requests.push(record);
          current = { record, left: bodyReader(head) };
          const script = scripts[path];
          if (script?.early === true) script.answer({ socket, head, reused: record.reused });
        }
        const taken = current.left(buffered);
        const used = taken < 0 ? buffered.length : taken;
        current.record.bytes += buffered.slice(0, used);
        buffered = buffered.slice(used);
        if (taken < 0) return;
        const done = current.record;
        current = null;
        const script = scripts[done.path];
        if (script === undefined)
          socket.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
        else if (script.early !== true)
          script.answer({ socket, head: done.bytes, reused: done.reused });
      }
    });
  });
  return Object.assign(tcp, { requests });
}

/**
 * How much of `data` a request's body takes: the bytes up to its end, or -1 when it takes all
 * of it and wants more. Stateful (called with each new piece).
 */
function bodyReader(head: string): (data: string) => number {
  const lower = head.toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(lower);
  if (/\r\ntransfer-encoding: *chunked/.test(lower)) {
    let seen = '';
    return (data) => {
      const before = seen.length;
      seen += data;
      const end = chunkedEnd(seen);
      return end < 0 ? -1 : end - before;
    };
  }
  let left = length === null ? 0 : Number(length[1]);
  return (data) => {
    if (data.length < left) {
      left -= data.length;
      return -1;
    }
    const taken = left;
    left = 0;
    return taken;
  };
}

/** Where a chunked body in `text` ends (after the last chunk and trailers), or -1. */
function chunkedEnd(text: string): number {
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol < 0) return -1;
    const size = parseInt(text.slice(at, eol), 16);
    if (size === 0) {
      const end = text.indexOf('\r\n\r\n', eol);
      return text.startsWith('\r\n', eol + 2) ? eol + 4 : end < 0 ? -1 : end + 4;
    }
    at = eol + 2 + size + 2;
    if (at > text.length) return -1;
  }
}
