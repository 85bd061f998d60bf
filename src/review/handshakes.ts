import type { Logger } from 'pino';
import { OTHERS, RefusalLimiter } from '../journal/refusal-limits.js';
import type { HandshakeView } from '../wire.js';

/**
 * TLS handshakes an agent refused during interception (its client does not trust trajgate's
 * CA), as operators are shown them: in `trajgate events`, on the review page and in the log.
 * The journal has each as a `refusal` record with `handshake` (ingress/intercept.ts).
 */

/** What to do about it, shown beside each. */
export const HANDSHAKE_HINT =
  "the client does not trust trajgate's CA: see `trajgate env` / `trajgate ca show`";

/** The log says so once per session and host in this long, then how many more there were. */
export const HANDSHAKE_LOG_MS = 60_000;

export type { HandshakeView };

/** A journal record (stamped or not) that is a refused handshake, with its session; or null. */
export function refusedHandshake(
  record: { readonly type: string },
  seq: number,
  ts: string,
): { session: string; view: HandshakeView } | null {
  const r = record as Partial<Record<'session' | 'target' | 'handshake' | 'reason', unknown>>;
  if (record.type !== 'refusal' || typeof r.handshake !== 'string') return null;
  if (typeof r.session !== 'string') return null;
  const view = {
    seq,
    ts,
    target: String(r.target ?? ''),
    handshake: r.handshake,
    reason: String(r.reason ?? ''),
    hint: HANDSHAKE_HINT,
  };
  return { session: r.session, view };
}

interface Refused {
  readonly session: string;
  readonly target: string;
  readonly handshake: string;
  readonly reason: string;
}

/**
 * The log's lines about refused handshakes: an agent that does not trust the CA retries, and
 * each try would be a line. The first for a session and host is logged at once; the rest in
 * HANDSHAKE_LOG_MS are counted into one line when it ends (or at shutdown), through the
 * limiter that bounds refusal records (journal/refusal-limits.ts).
 */
export class HandshakeLog {
  readonly #limiter: RefusalLimiter<Refused>;

  constructor(private readonly log: Logger) {
    this.#limiter = new RefusalLimiter<Refused>(
      (key, suppressed, last) =>
        log.warn(
          { session: last.session, target: last.target, handshake: last.handshake, suppressed },
          `${suppressed} more TLS handshake(s) refused by ${key === OTHERS ? 'other sessions' : `session ${last.session} to ${last.target}`} within ${HANDSHAKE_LOG_MS / 1000} s; the last: ${last.reason}; ${HANDSHAKE_HINT}`,
        ),
      { admit: 1, windowMs: HANDSHAKE_LOG_MS },
    );
  }

  refused(r: Refused): void {
    if (!this.#limiter.admit(JSON.stringify([r.session, r.target]), r)) return;
    this.log.warn(
      { session: r.session, target: r.target, handshake: r.handshake },
      `TLS handshake refused by session ${r.session} to ${r.target} (${r.handshake}): ${r.reason}; ${HANDSHAKE_HINT}`,
    );
  }

  /** Logs the counts still waiting (at shutdown). */
  close(): void {
    this.#limiter.close();
  }
}
