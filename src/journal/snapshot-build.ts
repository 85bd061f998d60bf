import { createHash } from 'node:crypto';
import { close, fdatasync, fstatSync, open, statSync, unlinkSync, write, writev } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { JournalRecord, Unstamped } from './records.js';
import { PART } from './snapshot-read.js';

/** What a snapshot holds, asked one session at a time (review/snapshot.ts gives it). */
export interface SnapshotSource {
  /** Every session it holds, in the order a restart is to give them. */
  sessions(): Iterable<string>;
  /** What it holds of one session (JSON-ready), null when nothing (gone). */
  part(session: string): object | null;
  /** What it holds beside the sessions (JSON-ready and small): the head's `state`. */
  head(): unknown;
  /**
   * The session a record changes (`gone`: evicts it), null when it changes only what the head
   * holds, 'all' when it may change any session's part.
   */
  touches(record: Unstamped<JournalRecord>): { session: string; gone: boolean } | 'all' | null;
  /** Registers for sessions changed without a record of this journal (a shared store's). */
  onChange?(listener: (session: string) => void): void;
}

/** A build's pace: encode for `sliceMs` at a time; seal once at most `settle` parts wait. */
export interface Pace {
  readonly sliceMs: number;
  readonly settle: number;
}
export const PACE: Pace = { sliceMs: 8, settle: 500 };

/** Thrown inside a build that was abandoned (the writer closed, or the seal failed). */
const ABANDONED = new Error('snapshot build abandoned');

/**
 * Writes a version 2 snapshot's part lines into `<path>.next` while the journal goes on in the
 * live file: slices of at most `sliceMs` on the event loop, appended with asynchronous writes.
 * A session whose part was written and that changes meanwhile (`changed`) is written again
 * later, once the first pass is done, until at most `settle` wait; then the file is synced and
 * the build is `ready`. `seal` writes the rest synchronously (a few hundred lines) for the head.
 */
export class SnapshotBuild {
  readonly #path: string;
  readonly #source: SnapshotSource;
  readonly #pace: Pace;
  readonly #hash = createHash('sha256');
  /**
   * The first pass: the source's sessions, iterated as they are (a Map's iterator visits
   * sessions added meanwhile), never copied: at 100,000 sessions a copy is a block of its own.
   */
  readonly #pass: Iterator<string>;
  /** Sessions written, and those to write (again): changed since, or not reached yet. */
  readonly #written = new Set<string>();
  readonly #dirty = new Set<string>();
  /** Written, then evicted: a `gone` line first, so one that comes back goes last. */
  readonly #evicted = new Set<string>();
  #fd = -1;
  #lines = 0;
  #bytes = 0;
  #busy = false;
  #abandoned = false;
  #ready = false;
  /** Settles when the build is ready, failed or dropped (whoever waits for a rotation). */
  readonly settled: Promise<void>;

  constructor(path: string, source: SnapshotSource, pace: Pace, onFail: (err: unknown) => void) {
    this.#path = path;
    this.#source = source;
    this.#pace = pace;
    this.#pass = source.sessions()[Symbol.iterator]();
    this.settled = this.#run().catch((err: unknown) => {
      if (err !== ABANDONED) onFail(err);
    });
  }

  /** Runs to `ready`; rejects with the error that stopped it (the `.next` file removed). */
  async #run(): Promise<void> {
    try {
      // Kept at once: a build abandoned while the file opened still closes and removes it.
      await this.#io<number>((done) =>
        open(this.#path, 'w', 0o600, (err, fd) => {
          if (!err) this.#fd = fd;
          done(err, fd);
        }),
      );
      await this.#drain(() => this.#next(this.#pass, true));
      do {
        const dirty = this.#dirty.values();
        const settle = this.#pace.settle;
        await this.#drain(() => (this.#dirty.size > settle ? this.#next(dirty, false) : null));
        await this.#io<void>((done) => fdatasync(this.#fd, done));
      } while (this.#dirty.size > this.#pace.settle);
      this.#ready = true;
    } catch (err) {
      this.#cleanUp();
      throw err;
    }
  }

  /** Built: the next record seals it (`seal`) before it is written. */
  get ready(): boolean {
    return this.#ready;
  }

  /** A session changed by a record (or evicted, `gone`) after the build started. */
  changed(session: string, gone: boolean): void {
    if (gone && this.#written.has(session)) this.#evicted.add(session);
    this.#dirty.add(session);
  }

  /** Any session may have changed: every part written is written again. */
  changedAll(): void {
    for (const session of this.#written) this.#dirty.add(session);
  }

  /**
   * Once `ready`: the parts still waiting, as bytes for the caller to write with the head; the
   * file's descriptor (the caller's from now on), how many part lines and bytes it will hold,
   * and their digest.
   */
  seal(): { fd: number; rest: Buffer; parts: number; bytes: number; digest: string } {
    const out: Buffer[] = [];
    for (const session of this.#dirty) this.#encode(session, out);
    this.#dirty.clear();
    const rest = Buffer.concat(out);
    const digest = this.#hash.digest('hex');
    return { fd: this.#fd, rest, parts: this.#lines, bytes: this.#bytes, digest };
  }

  /** Stops the build and removes `.next` (once a write in flight has returned). */
  abandon(): void {
    this.#abandoned = true;
    if (!this.#busy) this.#cleanUp();
  }

  /** Writes the sessions `next` gives, in slices of at most `sliceMs`, until it gives null. */
  async #drain(next: () => string | null): Promise<void> {
    for (let more = true; more;) {
      const out: Buffer[] = [];
      const start = performance.now();
      for (;;) {
        const session = next();
        if (session === null) {
          more = false;
          break;
        }
        this.#encode(session, out);
        if (performance.now() - start >= this.#pace.sliceMs) break;
      }
      if (out.length > 0) await this.#write(out);
      // A write that is all in the page cache returns at once: let the agents' requests in.
      await nextTurn();
      if (this.#abandoned) throw ABANDONED;
    }
  }

  /**
   * The next session of `from` to write, no longer dirty; `fresh` (the first pass): one not
   * written yet (the source holds most sessions twice, and some were written as changed).
   */
  #next(from: Iterator<string>, fresh: boolean): string | null {
    for (let n = from.next(); n.done !== true; n = from.next()) {
      if (fresh && this.#written.has(n.value)) continue;
      this.#dirty.delete(n.value);
      return n.value;
    }
    return null;
  }

  /** Appends the lines: one writev(2), no copy into one buffer; the rest of a short write after. */
  async #write(out: Buffer[]): Promise<void> {
    const size = out.reduce((n, b) => n + b.length, 0);
    let done = await this.#io<number>((cb) => writev(this.#fd, out, null, cb));
    if (done === size) return;
    const buf = Buffer.concat(out);
    while (done < size) {
      const n = await this.#io<number>((cb) => write(this.#fd, buf, done, size - done, null, cb));
      if (n === 0) throw new Error('the file accepted no bytes');
      done += n;
    }
  }

  /** The session's lines as of now: `gone` if it went since its last part, then its part. */
  #encode(session: string, out: Buffer[]): void {
    const part = this.#source.part(session);
    const id = JSON.stringify(session);
    if (this.#written.has(session) && (part === null || this.#evicted.has(session))) {
      this.#line(`{"type":"${PART}","session":${id},"gone":true}\n`, out);
      this.#written.delete(session);
    }
    this.#evicted.delete(session);
    if (part === null) return;
    const body = JSON.stringify(part);
    this.#line(
      `{"type":"${PART}","session":${id}${body === '{}' ? '}' : `,${body.slice(1)}`}\n`,
      out,
    );
    this.#written.add(session);
  }

  /** One line as bytes, counted into the digest in file order (within the slice's time). */
  #line(text: string, out: Buffer[]): void {
    const buf = Buffer.from(text);
    this.#hash.update(buf);
    this.#bytes += buf.length;
    this.#lines++;
    out.push(buf);
  }

  /** One file operation on the thread pool; none is left running when the build is dropped. */
  #io<T>(call: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
    this.#busy = true;
    return new Promise<T>((resolve, reject) => {
      call((err, value) => {
        this.#busy = false;
        // Dropped meanwhile: whatever the call did, nobody is told of a failure.
        if (this.#abandoned) reject(ABANDONED);
        else if (err) reject(err);
        else resolve(value);
      });
    });
  }

  /**
   * Closes the file and removes it, if `.next` is still this build's file: a build dropped
   * while a write was in flight cleans up after it returns, when a later build may own `.next`.
   */
  #cleanUp(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    try {
      const ours = fstatSync(fd).ino;
      if (statSync(this.#path).ino === ours) unlinkSync(this.#path);
    } catch {
      // Gone already, or left for the next start, which drops a `.next` beside a live file.
    }
    close(fd, () => undefined);
  }
}
