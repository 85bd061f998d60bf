import { constants } from 'node:http2';
import type {
  ClientHttp2Session,
  ClientHttp2Stream,
  IncomingHttpHeaders,
  OutgoingHttpHeaders,
} from 'node:http2';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { errors } from '../undici.js';

/** One request for an HTTP/2 upstream, as Forwarder builds it for undici. */
export interface H2Request {
  readonly origin: string;
  readonly path: string;
  readonly method: string;
  /** Flat [name, value, …]; `host` becomes `:authority` (RFC 9113 § 8.3.1). */
  readonly headers: readonly string[];
  readonly body: Readable | null;
  /** Longest upstream silence (ms) before its headers and between its body's chunks; 0: none. */
  readonly idleTimeout: number;
}

/**
 * What a request's answer is told, in undici's dispatch-handler terms (ResponseRelay is one),
 * and whether its flow is frozen: trajgate's hold is no upstream silence.
 */
export interface H2Handler extends Dispatcher.DispatchHandler {
  readonly frozen: boolean;
  onConnect(abort: (err: Error) => void): void;
  onHeaders(status: number, headers: readonly (Buffer | string)[], resume: () => void): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: readonly (Buffer | string)[] | null): void;
  onError(err: Error): void;
}

/**
 * One request on `session`, told to `handler` as undici tells it: connect, headers, data with
 * backpressure (pause until resumed), then complete with the trailers or an error. `ended`:
 * its stream is gone. Trailers are kept until the body's end: Node reports them when their
 * frame arrives, ahead of DATA still buffered while paused.
 */
export function exchange(
  session: ClientHttp2Session,
  req: H2Request,
  handler: H2Handler,
  ended: () => void,
): void {
  let stream: ClientHttp2Stream | null = null;
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  const fail = (err: Error) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    if (stream !== null && !stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
    req.body?.destroy();
    handler.onError(err);
  };
  handler.onConnect(fail);
  if (settled) return ended();
  try {
    stream = session.request(requestHeaders(req), { endStream: req.body === null });
  } catch (err) {
    ended();
    return fail(err as Error);
  }
  const s = stream;
  s.once('close', ended);
  let responded = false;
  if (req.idleTimeout > 0) {
    // The upstream's silence only: not while the agent is slow (paused) or its flow frozen.
    timer = setTimeout(() => {
      if (handler.frozen || s.isPaused()) return void timer?.refresh();
      const what = responded ? 'body' : 'headers';
      const message = `HTTP/2: ${what} timeout after ${req.idleTimeout}`;
      fail(
        responded ? new errors.BodyTimeoutError(message) : new errors.HeadersTimeoutError(message),
      );
    }, req.idleTimeout).unref();
  }
  const resume = () => {
    timer?.refresh();
    s.resume();
  };
  s.once('response', (headers: IncomingHttpHeaders) => {
    responded = true;
    timer?.refresh();
    if (settled) return;
    const go = handler.onHeaders(Number(headers[':status']), flat(headers), resume);
    // Read only now: Node emits 'response' on a later tick than it reads the HEADERS frame,
    // and DATA (or the stream's end) read before it would reach the agent first, its status
    // implied as 200 (seen under bench/proxy's h2 → h2 load).
    s.on('data', (chunk: Buffer) => {
      timer?.refresh();
      if (!settled && !handler.onData(chunk)) s.pause();
    });
    if (!go) s.pause();
  });
  let trailers: IncomingHttpHeaders = {};
  s.once('trailers', (t: IncomingHttpHeaders) => (trailers = t));
  s.once('end', () => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    // Answered before the request's end (RFC 9113 § 8.1): the rest of it is not sent.
    if (!s.writableEnded) {
      req.body?.destroy();
      s.close(constants.NGHTTP2_NO_ERROR);
    }
    handler.onComplete(flat(trailers));
  });
  s.once('error', fail);
  s.once('close', () => fail(new Error(`HTTP/2 stream closed (code ${s.rstCode}) before its end`)));
  if (req.body !== null) {
    req.body.once('error', fail);
    req.body.on('data', () => timer?.refresh());
    req.body.pipe(s);
  }
}

/** Pseudo-headers first (RFC 9113 § 8.3); a repeated field is sent once per value. */
function requestHeaders(req: H2Request): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {
    ':method': req.method,
    ':scheme': 'https',
    ':path': req.path,
  };
  for (let i = 0; i < req.headers.length; i += 2) {
    const name = (req.headers[i] as string).toLowerCase();
    const value = req.headers[i + 1] as string;
    const had = headers[name];
    if (name === 'host') headers[':authority'] = value;
    else if (had === undefined) headers[name] = value;
    else headers[name] = [...(Array.isArray(had) ? had : [String(had)]), value];
  }
  return headers;
}

/** Node's headers object as a flat field list, pseudo-headers left out. */
function flat(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push(name, v);
  }
  return out;
}
