import type { JournalRecord, Unstamped } from '../journal/records.js';

/** The last decision that ended (resume) or decided (deny) a session's pause. */
export interface PauseEnd {
  readonly type: 'resume' | 'deny';
  readonly seq: number;
  readonly by: string;
  readonly reset: boolean;
}

/**
 * The seq of each session's last `deny` record (a denial decides the pause before it), and how
 * its last pause ended, for a decision link that comes too late to say so. The deny seqs are in
 * a journal snapshot; the ends are what this process read or wrote (a message, not a rule).
 */
export class Denials {
  readonly #last = new Map<string, number>();
  readonly #ends = new Map<string, PauseEnd>();

  /** Every record of the journal, read back or written (openJournal's onAppend). */
  observe(record: Unstamped<JournalRecord>, seq: number): void {
    if (record.type === 'deny') {
      this.#last.set(record.session, seq);
      this.#ends.set(record.session, { type: 'deny', seq, by: record.by, reset: false });
    } else if (record.type === 'evict') {
      this.#last.delete(record.session);
      this.#ends.delete(record.session);
    } else if (record.type === 'resume' && !Array.isArray(record.once)) {
      const { session, by, reset } = record;
      this.#ends.set(session, { type: 'resume', seq, by, reset });
    }
  }

  lastSeq(session: string): number {
    return this.#last.get(session) ?? 0;
  }

  /** The session's last resume or deny, if this process saw it. */
  lastEnd(session: string): PauseEnd | undefined {
    return this.#ends.get(session);
  }

  /** The sessions with a last deny. */
  sessions(): IterableIterator<string> {
    return this.#last.keys();
  }

  restore(entries: readonly (readonly [string, number])[]): void {
    for (const [session, seq] of entries) this.#last.set(session, seq);
  }
}
