import { constants } from 'node:http2';
import type { Http2Stream, ServerHttp2Session } from 'node:http2';
import type { FlowControl } from '../action/flows.js';

/** GOAWAY's debug data is for humans (RFC 9113 § 6.8): the reason, kept short. */
const DEBUG_BYTES = 512;

/** Ends `session` with GOAWAY `code` carrying `why` as debug data, then destroys it. */
export function goAway(session: ServerHttp2Session, code: number, why: string): void {
  if (!session.destroyed && !session.closed) {
    session.goaway(code, 0, Buffer.from(why).subarray(0, DEBUG_BYTES));
  }
  session.destroy();
}

/**
 * The flow control of one intercepted HTTP/2 connection (its `intercepted` flow). nghttp2
 * reads and writes the TLS socket natively, so pausing or corking that socket stops nothing:
 * frozen, the connection instead judges no new stream until thawed (as a paused HTTP/1.1
 * connection reads no next request), while each stream already judged is frozen by its own
 * request flow. Closed, the connection ends with GOAWAY (CANCEL) carrying the reason.
 */
export class H2ConnectionFlow implements FlowControl {
  #frozen = false;
  /**
   * Streams that opened while frozen and are still open, judged at the thaw: at most the
   * concurrent streams, since one the agent resets leaves at once (judged then: as a reset).
   */
  readonly #waiting = new Map<Http2Stream, () => void>();

  constructor(private readonly session: ServerHttp2Session) {}

  /** Judges a new stream now, or at the thaw (or its reset, if sooner) while frozen. */
  admit(stream: Http2Stream, judge: () => void): void {
    if (!this.#frozen) return judge();
    this.#waiting.set(stream, judge);
    stream.once('close', () => {
      if (this.#waiting.delete(stream)) judge();
    });
  }

  freeze(): void {
    this.#frozen = true;
  }

  thaw(): void {
    this.#frozen = false;
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const judge of waiting) judge();
  }

  close(reason: string): void {
    this.#waiting.clear();
    goAway(this.session, constants.NGHTTP2_CANCEL, `trajgate closed this connection: ${reason}`);
  }
}
