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

  /** Stamps and writes one record; returns it as written. */
  append<R extends JournalRecord>(record: Unstamped<R>, options: { sync?: boolean } = {}): R {
    if (this.#fd < 0) throw new TrajgateError('E_JOURNAL_WRITE', `${this.path}: journal is closed`);
    const seq = this.#seq + 1;
    const ts = new Date(record.ts ?? this.#now()).toISOString();
    // Spread after the stamp keeps `seq` and `ts` as the first keys of every line.
    const stamped: Record<string, unknown> = { seq, ts, ...record };
    stamped.ts = ts;
    const line = Buffer.from(JSON.stringify(stamped) + '\n');
    this.#write(line);
    this.#seq = seq;
    this.#dirty = true;
    if (options.sync || this.#fsyncMs === 0) this.sync();
    else this.#timer ??= setTimeout(() => this.#flushLater(), this.#fsyncMs).unref();
    return stamped as unknown as R;
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
    this.sync();
    closeSync(this.#fd);
    this.#fd = -1;
  }

  #write(line: Buffer): void {
    let done = 0;
    try {
      while (done < line.length) done += writeSync(this.#fd, line, done, line.length - done);
      this.#size += line.length;
    } catch (err) {
      if (done > 0) {
        try {
          ftruncateSync(this.#fd, this.#size);
        } catch {
          // The next start-up will see the torn line and skip it.
        }
      }
      throw new TrajgateError(
        'E_JOURNAL_WRITE',
        `${this.path}: journal write failed: ${(err as Error).message}`,
      );
    }
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
