import type { TLSSocket } from 'node:tls';
import { handshakeThrough } from './tls.js';
import { waitFor } from './wait.js';

/**
 * A hand-made HTTP/2 client for bad input (RFC 9113): frames written byte by byte, header
 * blocks as HPACK literals without indexing and without Huffman coding (RFC 7541 § 6.2.2), so
 * a test can send what no real client library would.
 */

/** The client connection preface (RFC 9113 § 3.4). */
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

export const FRAME = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  GOAWAY: 0x7,
  CONTINUATION: 0x9,
} as const;

export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** Error codes (RFC 9113 § 7). */
export const ERROR = {
  PROTOCOL_ERROR: 0x1,
  FRAME_SIZE_ERROR: 0x6,
  CANCEL: 0x8,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

/** One frame: 9-byte header (length, type, flags, stream id) and its payload (§ 4.1). */
export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** A SETTINGS frame of `[id, value]` pairs (§ 6.5); none is what a client may start with. */
export function settings(pairs: readonly [number, number][] = []): Buffer {
  const payload = Buffer.alloc(pairs.length * 6);
  pairs.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FRAME.SETTINGS, 0, 0, payload);
}

/** HPACK integer with an `n`-bit prefix whose high bits are `first` (RFC 7541 § 5.1). */
function integer(value: number, n: number, first: number): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

const literal = (text: string): number[] => {
  const bytes = [...Buffer.from(text, 'latin1')];
  return [...integer(bytes.length, 7, 0), ...bytes];
};

/**
 * A header block of literal fields without indexing, new names (RFC 7541 § 6.2.2): names are
 * written exactly as given (upper case, connection-specific, pseudo-headers in any order).
 */
export function headerBlock(fields: readonly [string, string][]): Buffer {
  return Buffer.from(
    fields.flatMap(([name, value]) => [0x00, ...literal(name), ...literal(value)]),
  );
}

/** A request's usual pseudo-headers for `authority` and `path`, then `extra` fields. */
export function request(
  authority: string,
  path: string,
  extra: readonly [string, string][] = [],
): [string, string][] {
  return [
    [':method', 'GET'],
    [':scheme', 'https'],
    [':authority', authority],
    [':path', path],
    ...extra,
  ];
}

/** HEADERS on `stream` with `fields`; END_HEADERS unless `endHeaders` is false. */
export function headers(
  stream: number,
  fields: readonly [string, string][],
  options: { endStream?: boolean; endHeaders?: boolean } = {},
): Buffer {
  const flags =
    (options.endStream === false ? 0 : FLAG.END_STREAM) |
    (options.endHeaders === false ? 0 : FLAG.END_HEADERS);
  return frame(FRAME.HEADERS, flags, stream, headerBlock(fields));
}

export function rstStream(stream: number, code: number = ERROR.CANCEL): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, stream, payload);
}

/** A frame read back from the server. */
export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

/** A GOAWAY's fields (§ 6.8). */
export interface GoAway {
  readonly lastStream: number;
  readonly code: number;
  readonly debug: string;
}

export function goAwayOf(frames: readonly Frame[]): GoAway | undefined {
  const f = frames.find((x) => x.type === FRAME.GOAWAY);
  if (f === undefined) return undefined;
  return {
    lastStream: f.payload.readUInt32BE(0) & 0x7fffffff,
    code: f.payload.readUInt32BE(4),
    debug: f.payload.subarray(8).toString('utf8'),
  };
}

/** RST_STREAM codes the server sent for `stream`. */
export const resetsOf = (frames: readonly Frame[], stream: number): number[] =>
  frames
    .filter((f) => f.type === FRAME.RST_STREAM && f.stream === stream)
    .map((f) => f.payload.readUInt32BE(0));

/** DATA sent on `stream`, as text. */
export const bodyOf = (frames: readonly Frame[], stream: number): string =>
  Buffer.concat(
    frames.filter((f) => f.type === FRAME.DATA && f.stream === stream).map((f) => f.payload),
  ).toString('utf8');

/**
 * `:status` of the server's HEADERS on `stream` when it is one of HPACK's static entries
 * (200, 204, 206, 304, 400, 404, 500: RFC 7541 Appendix A), which nghttp2 sends indexed.
 */
export function staticStatusOf(frames: readonly Frame[], stream: number): number | undefined {
  const first = frames.find((x) => x.type === FRAME.HEADERS && x.stream === stream)?.payload[0];
  if (first === undefined || (first & 0x80) === 0) return undefined;
  const STATIC: Record<number, number> = {
    8: 200,
    9: 204,
    10: 206,
    11: 304,
    12: 400,
    13: 404,
    14: 500,
  };
  return STATIC[first & 0x7f];
}

/** A TLS connection speaking raw HTTP/2 through the proxy, and what the server sent on it. */
export interface RawH2 {
  readonly socket: TLSSocket;
  readonly frames: Frame[];
  /** The connection has closed. */
  closed: boolean;
  /** Writes; false once the socket no longer takes writes (the server cut it). */
  send(bytes: Buffer | string): boolean;
  /** Waits until `check` holds on the frames so far (or the connection closed, when `orClose`). */
  until(check: (frames: Frame[]) => boolean, ms?: number): Promise<void>;
}

/**
 * CONNECT `authority` through the proxy, a TLS handshake offering only `h2`, trusting `ca`;
 * nothing is sent yet, not even the preface.
 */
export async function rawH2(proxyPort: number, authority: string, ca: string): Promise<RawH2> {
  const hs = await handshakeThrough(proxyPort, authority, { ca, ALPNProtocols: ['h2'] });
  if (!hs.ok) throw new Error(`CONNECT ${authority}: ${hs.error}`);
  if (hs.socket.alpnProtocol !== 'h2') throw new Error(`ALPN chose ${hs.socket.alpnProtocol}`);
  const socket = hs.socket;
  let pending = Buffer.alloc(0);
  const raw: RawH2 = {
    socket,
    frames: [],
    closed: false,
    send: (bytes) => {
      if (socket.destroyed || !socket.writable) return false;
      socket.write(bytes);
      return true;
    },
    until: (check, ms = 20_000) => waitFor(() => check(raw.frames), ms, 'server frames'),
  };
  socket.on('data', (d: Buffer) => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      raw.frames.push({
        type: pending[3] as number,
        flags: pending[4] as number,
        stream: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      });
      pending = pending.subarray(9 + length);
    }
  });
  socket.on('error', () => {});
  socket.once('close', () => (raw.closed = true));
  return raw;
}

/** The preface and an empty SETTINGS: what every client sends first (§ 3.4). */
export const OPENING = Buffer.concat([Buffer.from(PREFACE, 'latin1'), settings()]);
