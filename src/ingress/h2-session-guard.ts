import { constants } from 'node:http2';
import type { ServerHttp2Session } from 'node:http2';
import type { Refusal } from '../action/refusal.js';
import { refusalLine } from '../action/refusal.js';
import { goAway, H2ConnectionFlow } from './h2-connection-flow.js';
import type { Tunnel } from './inner-http.js';

/**
 * Streams an agent may reset before trajgate has looked at them, per connection. A client
 * cancels now and then (a browser leaving a page); thousands in a row is the rapid-reset
 * attack (CVE-2023-44487), each reset costing the server a stream for free.
 */
const RESETS = 100;

type Refuse = (tunnel: Tunnel, status: number, reason: string) => Refusal;

/**
 * What one HTTP/2 connection may not do, and its one refusal when it does: nghttp2 finds the
 * malformed frames and floods (its errors reach `error`), the guard counts rapid resets and
 * idleness. The first breach is journaled as a refusal of the tunnel and the connection ends
 * with GOAWAY whose debug data carries the reason (RFC 9113 § 6.8); nothing more is recorded
 * for it, however many frames follow.
 */
export class SessionGuard {
  #resets = 0;
  #refused = false;
  /** The connection's control as an `intercepted` flow (pause, resume, deny). */
  readonly flow: H2ConnectionFlow;

  constructor(
    private readonly session: ServerHttp2Session,
    readonly tunnel: Tunnel,
    idleMs: number,
    private readonly refuse: Refuse,
  ) {
    this.flow = new H2ConnectionFlow(session);
    session.on('error', (err: Error & { code?: string }) =>
      this.breach(`HTTP/2 connection error (${err.code ?? 'ERR_HTTP2'}: ${err.message})`),
    );
    session.on('frameError', (type: number, code: number) =>
      this.breach(`HTTP/2 frame of type ${type} could not be sent (error ${code})`),
    );
    this.idle(idleMs);
  }

  /** Closes the connection after `ms` without a frame (limits.keepAliveIdle). */
  idle(ms: number): void {
    this.session.setTimeout(ms, () => this.session.close());
  }

  /** A stream the agent reset before it was judged. */
  reset(): void {
    if (++this.#resets > RESETS)
      this.breach(
        `HTTP/2 rapid reset: more than ${RESETS} streams reset by the agent before they were answered (CVE-2023-44487)`,
        constants.NGHTTP2_ENHANCE_YOUR_CALM,
      );
  }

  /** Journals the connection's refusal once, then ends it with GOAWAY carrying the reason. */
  breach(reason: string, code: number = constants.NGHTTP2_PROTOCOL_ERROR): void {
    if (this.#refused) return;
    this.#refused = true;
    goAway(this.session, code, refusalLine(this.refuse(this.tunnel, 400, reason)));
  }
}
