import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { TrajgateError } from '../errors.js';
import type { JournalRecord, Unstamped } from './records.js';

export interface WriterOptions {
  /** Highest `seq` already in the file; the next record gets the one after. */
  readonly lastSeq: number;
  /** Batch interval for fdatasync; 0 syncs after every record. */
  readonly fsyncMs: number;
  /** Clock for records that carry no `ts` of their own. */
  readonly now?: () => number;
}

/**
 * The append-only journal. Each record is written with a synchronous write before the caller
 * acts on it, so once `append` returns the record is in the kernel and survives `kill -9`;
 * fdatasync (surviving power loss) is batched, and done at once when asked (on PAUSE).
 * A failed write throws E_JOURNAL_WRITE and cuts the file back to its last whole record: the
 * caller must then refuse the request (fail closed).
 */
export class JournalWriter {
  readonly path: string;
  #fd: number;
  #seq: number;
  #size: number;
  #dirty = false;
  #deferred = '';
  #flushQueued = false;
  #timer: NodeJS.Timeout | null = null;
  readonly #fsyncMs: number;
  readonly #now: () => number;

  constructor(path: string, options: WriterOptions) {
    this.path = path;
    try {
      this.#fd = openSync(path, 'a', 0o600);
      this.#size = fstatSync(this.#fd).size;
    } catch (err) {
      throw new TrajgateError(
        'E_JOURNAL_WRITE',
        `${path}: cannot open journal: ${(err as Error).message}`,
      );
    }
    this.#seq = options.lastSeq;
    this.#fsyncMs = options.fsyncMs;
    this.#now = options.now ?? Date.now;
  }

  get lastSeq(): number {
    return this.#seq;
  }

  /** Stamps and writes one record (after any deferred ones); returns it as written. */
  append<R extends JournalRecord>(record: Unstamped<R>, options: { sync?: boolean } = {}): R {
    const [stamped, line] = this.#stamp(record);
    this.#write(line);
    if (options.sync || this.#fsyncMs === 0) this.sync();
    return stamped as R;
  }

  /**
   * Stamps a record that decides nothing (an outcome) and writes it with the next record or
   * on the next turn of the event loop, saving a syscall per request. File order is seq order.
   */
  appendLater<R extends JournalRecord>(record: Unstamped<R>): R {
    const [stamped, line] = this.#stamp(record);
    this.#deferred += line;
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      setImmediate(() => {
        this.#flushQueued = false;
        try {
          if (this.#deferred !== '' && this.#fd >= 0) this.#write('');
        } catch {
          // Kept for the next append, whose caller can act on the failure.
        }
      });
    }
    return stamped as R;
  }

  /** fdatasync now if anything was written since the last one. */
  sync(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (!this.#dirty || this.#fd < 0) return;
    this.#dirty = false;
    fdatasyncSync(this.#fd);
  }

  close(): void {
    if (this.#fd < 0) return;
    if (this.#deferred !== '') this.#write('');
    this.sync();
    closeSync(this.#fd);
    this.#fd = -1;
  }

  #stamp(record: Unstamped<JournalRecord>): [JournalRecord, string] {
    if (this.#fd < 0) throw new TrajgateError('E_JOURNAL_WRITE', `${this.path}: journal is closed`);
    const seq = ++this.#seq;
    const ts = new Date(record.ts ?? this.#now()).toISOString();
    // Spread after the stamp keeps `seq` and `ts` as the first keys of every line.
    const stamped: Record<string, unknown> = { seq, ts, ...record };
    stamped.ts = ts;
    return [stamped as unknown as JournalRecord, JSON.stringify(stamped) + '\n'];
  }

  /** Writes the deferred records and `text` in one write(2). */
  #write(text: string): void {
    const data = Buffer.from(this.#deferred + text);
    let done = 0;
    try {
      while (done < data.length) done += writeSync(this.#fd, data, done, data.length - done);
    } catch (err) {
      if (done > 0) {
        try {
          ftruncateSync(this.#fd, this.#size);
        } catch {
          // The next start-up sees the torn line and skips it.
        }
      }
      throw new TrajgateError(
        'E_JOURNAL_WRITE',
        `${this.path}: journal write failed: ${(err as Error).message}`,
      );
    }
    this.#size += data.length;
    this.#deferred = '';
    this.#dirty = true;
    if (this.#fsyncMs > 0)
      this.#timer ??= setTimeout(() => this.#flushLater(), this.#fsyncMs).unref();
  }

  #flushLater(): void {
    this.#timer = null;
    try {
      this.sync();
    } catch {
      // An fsync error resurfaces on the next write or close, where the caller can act on it.
      this.#dirty = true;
    }
  }
}
