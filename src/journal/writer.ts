import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  writeSync,
} from 'node:fs';
import { performance } from 'node:perf_hooks';
import { errnoCode, TrajgateError } from '../errors.js';
import { osError, osMessage } from '../os-error.js';
import { digestOf, GENESIS } from './chain.js';
import type { RotateOptions } from './rotate.js';
import { Rotation, SNAPSHOT_VERSION } from './rotate.js';
import { recordFields } from './json.js';
import { withJournaledTarget } from './long-target.js';
import { PendingLines } from './pending-lines.js';
import type { JournalRecord, Unstamped } from './records.js';

/** A record stamped and not yet written: its line's bytes with the newline. */
type Stamped = Written & { readonly bytes: number };

export interface WriterOptions {
  /** Highest `seq` already in the file; the next record gets the one after. */
  readonly lastSeq: number;
  /** Digest of the file's last line (journal/chain.ts); GENESIS (the default) for a new file. */
  readonly prev?: string;
  /** Batch interval for fdatasync; 0 syncs after every record. */
  readonly fsyncMs: number;
  /** Clock for records that carry no `ts` of their own. */
  readonly now?: () => number;
  /** Told how long each write(2) took, in seconds (metrics). */
  readonly onWrite?: (seconds: number) => void;
  /**
   * Told of each record once it is in the file: its seq, the offset of its line and the
   * line's length without the newline (the session index).
   */
  readonly onAppend?: (
    record: Unstamped<JournalRecord>,
    seq: number,
    offset: number,
    bytes: number,
  ) => void;
  /**
   * Told of each record this writer put in the file, with its line as written (no newline) and
   * its time: what leaves the gateway as telemetry is exactly what was journaled. Never throws.
   */
  readonly onWritten?: (written: Written) => void;
  /** Told of each failed write (its error) and of the first write that succeeds after one. */
  readonly health?: { failed(error: string): void; recovered(): void };
  /** Rotation with snapshots (journal.rotate); none when absent. */
  readonly rotate?: RotateOptions;
  /** The bytes of the snapshot the file starts with (rotation counts `rotate` beyond them). */
  readonly snapshotBytes?: number;
  /** false: lines carry no `prev` (journal.chain: false, to measure what the chain costs). */
  readonly chain?: boolean;
}

/** A record as it went into the file. */
export interface Written {
  readonly record: Unstamped<JournalRecord>;
  readonly seq: number;
  /** Its `ts`, in ms since the epoch. */
  readonly ms: number;
  readonly line: string;
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
  /** Digest of the last line stamped, and of the last line in the file (a failed write). */
  #prev: string;
  #prevWritten: string;
  #dirty = false;
  #flushQueued = false;
  #syncing = false;
  #isoMs = NaN;
  #isoText = '';
  #timer: NodeJS.Timeout | null = null;
  /** Lines stamped and not yet written: deferred outcomes, then the record being appended. */
  readonly #pending = new PendingLines();
  readonly #fsyncMs: number;
  readonly #now: () => number;
  readonly #onWrite: ((seconds: number) => void) | undefined;
  readonly #onAppend: WriterOptions['onAppend'];
  readonly #onWritten: WriterOptions['onWritten'];
  /** Records stamped and not yet written, for `onAppend` and `onWritten`, in file order. */
  #stamped: Stamped[] = [];
  readonly #health: WriterOptions['health'];
  #failing = false;
  readonly #rotation: Rotation;
  readonly #chain: boolean;

  constructor(path: string, options: WriterOptions) {
    this.path = path;
    try {
      this.#fd = openSync(path, 'a', 0o600);
      this.#size = fstatSync(this.#fd).size;
    } catch (err) {
      throw osError('E_JOURNAL_WRITE', err, {
        op: 'open',
        what: 'the journal',
        path,
        key: 'journal.path',
      });
    }
    this.#seq = options.lastSeq;
    this.#prev = this.#prevWritten = options.prev ?? GENESIS;
    this.#fsyncMs = options.fsyncMs;
    this.#now = options.now ?? Date.now;
    this.#onWrite = options.onWrite;
    this.#onAppend = options.onAppend;
    this.#onWritten = options.onWritten;
    this.#health = options.health;
    this.#rotation = new Rotation(path, options.rotate, options.snapshotBytes);
    this.#chain = options.chain !== false;
  }

  get lastSeq(): number {
    return this.#seq;
  }

  /**
   * Settles once the snapshot being built (journal.rotate) is ready, failed or dropped: the
   * next record then rotates. Null when none is being built.
   */
  get building(): Promise<void> | null {
    return this.#rotation.building;
  }

  /**
   * Stamps one record with the next `seq` and `ts` (the given time, or now) and writes it,
   * after any deferred ones; returns its seq. `sync` also waits for fdatasync.
   */
  append(record: Unstamped<JournalRecord>, options: { ts?: number; sync?: boolean } = {}): number {
    this.#stamp(record, options.ts);
    this.#write();
    if (options.sync || this.#fsyncMs === 0) this.sync();
    return this.#seq;
  }

  /**
   * Writes records that stand or fall together (a PAUSE and its pause record) in one write(2),
   * so the file gets all of them or none; each stamped with `ts` (or now), the i-th with seq
   * `lastSeq + 1 + i`. Synced at once.
   */
  appendAll(records: readonly Unstamped<JournalRecord>[], ts?: number): void {
    for (const record of records) this.#stamp(record, ts);
    this.#write();
    this.sync();
  }

  /**
   * Stamps a record that decides nothing (an outcome) with `ts` (or now) and writes it with the
   * next record or on the next turn of the event loop, saving a syscall per request. File order
   * is seq order.
   */
  appendLater(record: Unstamped<JournalRecord>, ts?: number): number {
    this.#stamp(record, ts);
    this.#flushSoon();
    return this.#seq;
  }

  #flushSoon(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    setImmediate(() => {
      this.#flushQueued = false;
      try {
        if (this.#pending.bytes > 0 && this.#fd >= 0) this.#write();
      } catch {
        // Outcome lines are dropped with the failed write; the decisions they end are on disk.
      }
    });
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
    this.#rotation.close();
    if (this.#fd < 0) return;
    if (this.#pending.bytes > 0) this.#write();
    this.sync();
    closeSync(this.#fd);
    this.#fd = -1;
  }

  /**
   * Takes the next seq and returns the record's line: `{"seq":N,"ts":"…","prev":"…",` then its
   * own fields (seq, ts and the chain's prev lead every line).
   */
  #stamp(given: Unstamped<JournalRecord>, ts: number | undefined): void {
    // Whoever built it, an agent's long target is not the agent's to spend the disk on.
    const record = withJournaledTarget(given);
    if (this.#fd < 0) throw new TrajgateError('E_JOURNAL_WRITE', `${this.path}: journal is closed`);
    // Before the line is added: a rotation writes the lines stamped so far to the old file.
    if (this.#rotation.ready(this.#size)) this.#rotateNow();
    // After: a snapshot sealed now holds the state before this record, a build goes on.
    this.#rotation.touched(record);
    const seq = ++this.#seq;
    const ms = ts ?? this.#now();
    const line = `${this.#lead(seq, this.iso(ms))}${recordFields(record)}`;
    const bytes = this.#pending.add(line);
    if (this.#chain) this.#prev = this.#pending.lastDigest();
    if (this.#onAppend || this.#onWritten)
      this.#stamped.push({ record, seq, bytes: bytes + 1, ms, line });
  }

  /** `{"seq":N,"ts":"…","prev":"…",` (no prev without the chain). */
  #lead(seq: number, iso: string): string {
    return this.#chain
      ? `{"seq":${seq},"ts":"${iso}","prev":"${this.#prev}",`
      : `{"seq":${seq},"ts":"${iso}",`;
  }

  /**
   * Starts a new live file with the snapshot built meanwhile (rotate.ts), sealed by its head as
   * of the last record (`seq` is that record's: a snapshot takes no seq of its own, so a caller
   * that knows the next seq stays right), chained on from the old file's last line. Records
   * stamped and not yet written go to the old file first. A rotation that fails is retried
   * 1 MiB later; the journal goes on meanwhile.
   */
  #rotateNow(): void {
    if (this.#pending.bytes > 0) this.#write();
    const lead = this.#lead(this.#seq, new Date(this.#now()).toISOString());
    const done = this.#rotation.rotate(
      this.#fd,
      this.#size,
      (fields) => `${lead}"type":"snapshot","version":${SNAPSHOT_VERSION},${fields}}`,
    );
    if (done === null) return;
    const bytes = Buffer.byteLength(done.text) + 1;
    this.#fd = done.fd;
    this.#size = done.at + bytes;
    if (this.#chain) this.#prev = this.#prevWritten = digestOf(done.text);
    const record = { type: 'snapshot', version: SNAPSHOT_VERSION, state: null } as const;
    this.#onAppend?.(record, this.#seq, this.#rotation.base + done.at, bytes - 1);
  }

  /** ISO 8601 of `ms`; many records share a millisecond under load, so each is formatted once. */
  iso(ms: number): string {
    if (ms !== this.#isoMs) {
      this.#isoMs = ms;
      this.#isoText = new Date(ms).toISOString();
    }
    return this.#isoText;
  }

  /** Writes the pending lines (deferred outcomes, then what is being appended) in one write(2). */
  #write(): void {
    const stamped = this.#stamped;
    this.#stamped = [];
    const out = this.#pending.buffer;
    const size = this.#pending.bytes;
    // Written or dropped: either way these lines are no longer pending.
    this.#pending.clear();
    let done = 0;
    const start = this.#onWrite ? performance.now() : 0;
    try {
      // A short write to a file is rare (disk full); finish it.
      while (done < size) {
        const n = writeSync(this.#fd, out, done, size - done);
        if (n === 0) throw new Error('the file accepted no bytes');
        done += n;
      }
    } catch (err) {
      if (done > 0) {
        try {
          ftruncateSync(this.#fd, this.#size);
        } catch {
          // The next start-up sees the torn line and skips it.
        }
      }
      // The file was cut back to its last whole line: the chain goes on from that one.
      this.#prev = this.#prevWritten;
      this.#failing = true;
      const error = this.#whyFailed(err);
      this.#health?.failed(error);
      throw new TrajgateError('E_JOURNAL_WRITE', `${this.path}: journal write failed: ${error}`);
    }
    this.#prevWritten = this.#prev;
    if (this.#failing) {
      this.#failing = false;
      this.#health?.recovered();
    }
    if (this.#onWrite) this.#onWrite((performance.now() - start) / 1000);
    let at = this.#rotation.base + this.#size;
    for (const stamp of stamped) {
      this.#onAppend?.(stamp.record, stamp.seq, at, stamp.bytes - 1);
      this.#onWritten?.(stamp);
      at += stamp.bytes;
    }
    this.#size += size;
    this.#dirty = true;
    if (this.#fsyncMs > 0)
      this.#timer ??= setTimeout(() => this.#flushLater(), this.#fsyncMs).unref();
  }

  /**
   * A failed write's message; out of space, rotation tries to free some and says why it could
   * not (files kept for `journal.keepFor`): refused until then, as on any full disk.
   */
  #whyFailed(err: unknown): string {
    const message = osMessage(err, { op: 'write', path: this.path, key: 'journal.path' });
    const code = errnoCode(err);
    if (code !== 'ENOSPC' && code !== 'EDQUOT') return message;
    const held = this.#rotation.outOfSpace();
    return held === null ? message : `${message}; ${held}`;
  }

  /** The batched sync runs on the thread pool, so a slow disk never stalls the proxy. */
  #flushLater(): void {
    this.#timer = null;
    if (!this.#dirty || this.#fd < 0 || this.#syncing) return;
    this.#dirty = false;
    this.#syncing = true;
    fdatasync(this.#fd, (err) => {
      this.#syncing = false;
      // A failed sync is retried with the next batch; writes themselves report failures.
      if (err) this.#dirty = true;
    });
  }
}
