import { constants } from 'node:http2';
import type { ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { socketControl } from '../action/flow-registry.js';
import type { FlowControl } from '../action/flows.js';
import type { Refusal } from '../action/refusal.js';
import { refusalLine } from '../action/refusal.js';
import type { WireWatch } from './h2-wire.js';
import { LINGER_MS } from './h2-wire.js';
import type { Tunnel } from './tunnel-names.js';

/**
 * Streams an agent may reset before trajgate has looked at them, per connection. A client
 * cancels now and then (a browser leaving a page); thousands in a row is the rapid-reset
 * attack (CVE-2023-44487), each reset costing the server a stream for free.
 */
const RESETS = 100;

/** GOAWAY's debug data is for humans (RFC 9113 § 6.8): the reason, kept short. */
const DEBUG_BYTES = 512;

const {
  NGHTTP2_NO_ERROR,
  NGHTTP2_PROTOCOL_ERROR,
  NGHTTP2_INTERNAL_ERROR,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_CANCEL,
  NGHTTP2_ENHANCE_YOUR_CALM,
} = constants;

/** RFC 9113 § 7's names of the error codes nghttp2 ends a connection with. */
const ERROR_NAMES = [
  'NO_ERROR',
  'PROTOCOL_ERROR',
  'INTERNAL_ERROR',
  'FLOW_CONTROL_ERROR',
  'SETTINGS_TIMEOUT',
  'STREAM_CLOSED',
  'FRAME_SIZE_ERROR',
  'REFUSED_STREAM',
  'CANCEL',
  'COMPRESSION_ERROR',
  'CONNECT_ERROR',
  'ENHANCE_YOUR_CALM',
  'INADEQUATE_SECURITY',
  'HTTP_1_1_REQUIRED',
];
const errorName = (code: number): string => ERROR_NAMES[code] ?? `error ${code}`;

/** Socket errors that say the agent went away, not that it sent anything wrong. */
const LEFT = new Set(['ECONNRESET', 'EPIPE']);

type Refuse = (tunnel: Tunnel, status: number, reason: string) => Refusal;

/**
 * What one HTTP/2 connection may not do, and one refusal for each thing it did. A broken
 * connection is refused once, however many frames follow: a wrong preface or a SETTINGS flood
 * (H2Wire finds them first), a GOAWAY nghttp2 sends by itself for a malformed frame (seen by
 * H2Wire; its debug data becomes trajgate's reason), Node's session errors (CONTINUATION
 * floods, too many invalid frames), too many streams reset before they were judged. The
 * refusal is journaled, then the connection ends with GOAWAY carrying the reason (RFC 9113
 * § 6.8). A stream nghttp2 resets before Node announces it (a malformed request, RFC 9113
 * § 8.1.1) is refused on its own, once; Node ends the connection after 16 of them
 * (maxSessionInvalidFrames). An agent that just leaves is no refusal.
 */
export class SessionGuard implements WireWatch {
  #resets = 0;
  #ended = false;
  /** Streams Node announced and that are open: the others nghttp2 resets were never seen. */
  readonly #announced = new Map<number, ServerHttp2Stream>();
  /** Streams counted as reset before they were judged. */
  readonly #counted = new WeakSet<ServerHttp2Stream>();
  /**
   * The connection's control as an `intercepted` flow: its TLS socket paused and corked (H2Wire
   * passes its bytes through JavaScript, so that stops nghttp2 too); closed with GOAWAY (CANCEL)
   * carrying the reason.
   */
  readonly flow: FlowControl;

  constructor(
    private readonly session: ServerHttp2Session,
    socket: TLSSocket,
    readonly tunnel: Tunnel,
    idleMs: number,
    private readonly refuse: Refuse,
  ) {
    const held = socketControl(socket);
    let frozen = false;
    this.flow = {
      freeze: () => {
        frozen = true;
        held.freeze();
      },
      thaw: () => {
        frozen = false;
        held.thaw();
      },
      close: (reason) => {
        frozen = false;
        held.thaw();
        // Its request flows were closed first: what they ended with (a gRPC call's status in
        // its trailers) goes out before the connection does.
        void this.#streamsEnded().then(() =>
          this.#end(NGHTTP2_CANCEL, `trajgate closed this connection: ${reason}`),
        );
      },
    };
    session.on('stream', (stream: ServerHttp2Stream) => {
      // Node announces a batch's streams once nghttp2 has read it: one the agent reset in the
      // same batch is counted now, before the judgement's turn comes.
      if (stream.closed) return this.#reset(stream);
      const id = stream.id as number;
      this.#announced.set(id, stream);
      stream.once('close', () => {
        this.#announced.delete(id);
        // A stream that ended while its connection is frozen (the refusal of the request that
        // paused the session) is answered now: only its frames wait in the corked socket, as
        // nothing is read from the agent meanwhile (so no PING is answered either).
        if (frozen && !socket.destroyed) {
          socket.uncork();
          socket.cork();
        }
      });
    });
    session.on('error', (err: Error & { code?: string }) => {
      // The agent left (reset, or gone while written to): no refusal, as for HTTP/1.1.
      if (LEFT.has(err.code ?? '')) return;
      this.breach(`HTTP/2 connection error (${err.code ?? 'ERR_HTTP2'}: ${err.message})`);
    });
    session.on('frameError', (type: number, code: number) =>
      this.breach(`HTTP/2 frame of type ${type} could not be sent (error ${code})`),
    );
    this.idle(idleMs);
  }

  /** Closes the connection after `ms` without a frame (limits.keepAliveIdle). */
  idle(ms: number): void {
    this.session.setTimeout(ms, () => this.session.close());
  }

  /** Whether `stream` is to be judged now: false when the agent reset it meanwhile. */
  judge(stream: ServerHttp2Stream): boolean {
    if (!stream.closed && !stream.destroyed) return true;
    this.#reset(stream);
    return false;
  }

  /** A stream the agent reset before it was judged, counted once. */
  #reset(stream: ServerHttp2Stream): void {
    if (this.#counted.has(stream)) return;
    this.#counted.add(stream);
    if (++this.#resets > RESETS)
      this.breach(
        `HTTP/2 rapid reset: more than ${RESETS} streams reset by the agent before they were answered (CVE-2023-44487)`,
        NGHTTP2_ENHANCE_YOUR_CALM,
      );
  }

  /** Journals the connection's refusal once, then ends it with GOAWAY carrying the reason. */
  breach(reason: string, code: number = NGHTTP2_PROTOCOL_ERROR): void {
    if (this.#ended) return;
    this.#end(code, refusalLine(this.refuse(this.tunnel, 400, reason)));
  }

  /**
   * nghttp2's own GOAWAY for a connection error: journaled as the connection's refusal, sent
   * with the reason as its debug data, and the session ends. Trajgate's own GOAWAYs (a breach,
   * a deny, a drain's NO_ERROR) and Node's (its errors come as 'error') pass as they are.
   */
  goAwaySent(code: number, debug: string): string | null {
    // Trajgate's own GOAWAY is out: the session may go now (before, its end would drop it).
    if (this.#ended) {
      setImmediate(() => this.session.destroy(undefined, code));
      return null;
    }
    if (code === NGHTTP2_NO_ERROR || this.session.destroyed) return null;
    this.#ended = true;
    const why = connectionError(code, debug);
    const line = refusalLine(this.refuse(this.tunnel, 400, why));
    // Not from within nghttp2's own write: a turn later.
    setImmediate(() => this.session.destroy(undefined, code));
    return line.slice(0, DEBUG_BYTES);
  }

  /** nghttp2 reset a stream: refused once when Node never announced it. */
  resetSent(stream: number, code: number): void {
    if (this.#ended || this.#announced.has(stream)) return;
    const why = unseenReset(stream, code, this.session.closed);
    if (why !== null) this.refuse(this.tunnel, 400, why);
  }

  badPreface(got: string): void {
    this.breach(
      `HTTP/2 connection preface expected (PRI * HTTP/2.0, RFC 9113 § 3.4), the agent sent ${got}`,
    );
  }

  /** Resolves once the streams whose answers were ended have closed, LINGER_MS at most. */
  #streamsEnded(): Promise<void> {
    const ending = [...this.#announced.values()].filter((s) => s.writableEnded && !s.closed);
    if (ending.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, LINGER_MS).unref();
      let left = ending.length;
      for (const stream of ending)
        stream.once('close', () => {
          if (--left > 0) return;
          clearTimeout(timer);
          resolve();
        });
    });
  }

  flood(reason: string): void {
    this.breach(reason, NGHTTP2_ENHANCE_YOUR_CALM);
  }

  /**
   * Ends the connection with GOAWAY `code` carrying `why` as debug data; the session is
   * destroyed once it has gone out (goAwaySent), or after LINGER_MS if it cannot go.
   */
  #end(code: number, why: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const session = this.session;
    if (session.destroyed) return;
    if (session.closed) return void session.destroy(undefined, code);
    // The last stream it took up (RFC 9113 § 6.8): streams up to it are ended one by one.
    const last = session.state.lastProcStreamID ?? 0;
    session.goaway(code, last, Buffer.from(why).subarray(0, DEBUG_BYTES));
    setTimeout(() => session.destroy(undefined, code), LINGER_MS).unref();
  }
}

/** What nghttp2's GOAWAY `code` (and its `debug` data) says the agent did. */
function connectionError(code: number, debug: string): string {
  // nghttp2 (≥ 1.57) ends a connection with INTERNAL_ERROR for one cause the peer gives it:
  // streams reset faster than its limit (a burst of 1000, then 33 a second).
  if (code === NGHTTP2_INTERNAL_ERROR)
    return 'HTTP/2 rapid reset: the agent reset streams faster than nghttp2 allows (CVE-2023-44487)';
  const detail = debug === '' ? (CODE_DETAIL[code] ?? '') : debug;
  const name = `HTTP/2 connection error ${errorName(code)} (RFC 9113 § 5.4.1)`;
  return detail === '' ? name : `${name}: ${detail}`;
}

/** What a connection error means, where nghttp2's GOAWAY gives no detail. */
const CODE_DETAIL: Record<number, string> = {
  [constants.NGHTTP2_FRAME_SIZE_ERROR]:
    'a frame over SETTINGS_MAX_FRAME_SIZE or of the wrong length for its type (§ 4.2)',
  [constants.NGHTTP2_COMPRESSION_ERROR]: 'a header block HPACK cannot decode (RFC 7541)',
  [constants.NGHTTP2_FLOW_CONTROL_ERROR]: 'more sent than the flow-control window allows (§ 6.9)',
};

/**
 * Why nghttp2 reset a stream before Node announced it, by its RST_STREAM code (RFC 9113 § 7);
 * null for a reset that refuses nothing (streams past a drain's GOAWAY are REFUSED_STREAM too).
 */
function unseenReset(stream: number, code: number, closing: boolean): string | null {
  const on = `HTTP/2 stream ${stream}`;
  if (code === NGHTTP2_PROTOCOL_ERROR)
    return `${on}: malformed request, reset with PROTOCOL_ERROR (RFC 9113 § 8.1.1, § 8.2: a field name with upper case, a connection-specific field such as connection, keep-alive, transfer-encoding or upgrade, te other than "trailers", a pseudo-header missing, repeated, unknown or after a regular field, or a body longer than its content-length)`;
  if (code === NGHTTP2_ENHANCE_YOUR_CALM)
    return `${on}: request header section over limits.headerBytes or 256 fields, or the connection over its memory, reset with ENHANCE_YOUR_CALM`;
  if (code === NGHTTP2_REFUSED_STREAM && !closing)
    return `${on}: over the connection's concurrent streams, reset with REFUSED_STREAM (RFC 9113 § 5.1.2)`;
  return null;
}
