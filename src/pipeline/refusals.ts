import type { Refusal } from '../action/refusal.js';
import { plainRefusal } from '../action/refusal.js';
import type { Source } from '../event/event.js';
import type { RefusalRecord, Unstamped } from '../journal/records.js';
import { PER_SECOND, RefusalLimiter } from '../journal/refusal-limits.js';
import type { JournalWriter } from '../journal/writer.js';

/** A request refused before it became an event, as the journal names it. */
export interface Unjudged {
  readonly source: Source;
  readonly client: string;
  readonly session?: string;
  readonly method?: string;
  readonly target?: string;
  /** The agent refused the TLS handshake: its alert, or `closed` (ingress/intercept.ts). */
  readonly handshake?: string;
  /** Refused on the SOCKS5 listener. */
  readonly via?: 'socks';
}

/**
 * Requests refused before they became events (malformed, no credentials), journaled. Without a
 * session a request came before any identity, from whoever can reach a listener, so past
 * PER_SECOND a second from one address it is counted into a summary, not written. With one it
 * belongs to an identified agent's (or, without agents, a client address's) trajectory, whose
 * judged requests write uncapped records anyway: kept. Targets are bounded by the writer, as in
 * every record (journal/long-target.ts).
 */
export class Refusals {
  readonly #limiter = new RefusalLimiter((client, suppressed, last) =>
    this.#append({
      type: 'refusal',
      source: last.source,
      client,
      status: last.status,
      reason: `${suppressed} more refusals within one second, past ${PER_SECOND}, not written one by one; the last: ${last.reason}`,
      suppressed,
    }),
  );

  constructor(private readonly journal: JournalWriter) {}

  refuse(ask: Unjudged, status: number, reason: string): Refusal {
    if (
      ask.session !== undefined ||
      this.#limiter.admit(ask.client, { source: ask.source, status, reason })
    ) {
      this.#append({ type: 'refusal', ...ask, status, reason });
    }
    return plainRefusal(status, reason);
  }

  /** Writes the summaries of refusals left out (at shutdown, before the journal closes). */
  close(): void {
    this.#limiter.close();
  }

  #append(record: Unstamped<RefusalRecord>): void {
    try {
      this.journal.append(record);
    } catch {
      // Refused either way; nothing was decided about a trajectory.
    }
  }
}
