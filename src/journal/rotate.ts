import {
  closeSync,
  existsSync,
  statSync,
  fdatasyncSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { TrajgateError } from '../errors.js';
import { systemMessage } from '../os-error.js';
import { listRotated, registerSegments, rotatedName, Segments } from './files.js';
import type { JournalRecord, Unstamped } from './records.js';
import type { SnapshotSource } from './snapshot-build.js';
import type { Pace } from './snapshot-build.js';
import { PACE, SnapshotBuild } from './snapshot-build.js';

/** The snapshot `version` written (parts, then a head: snapshot-read.ts). */
export const SNAPSHOT_VERSION = 2;

export interface RotateOptions {
  /** The live file is rotated once it holds this many bytes after its snapshot (0: never). */
  readonly bytes: number;
  /** Rotated files kept; the oldest beyond are deleted once older than `keepFor`. */
  readonly keep: number;
  /**
   * Milliseconds since its last write before a rotated file beyond `keep` may be deleted: an
   * agent that fills the journal cannot rotate its own records out before anyone looks.
   */
  readonly keepFor: number;
  /**
   * The whole state a restart rebuilds, asked a session at a time while records go on: the new
   * file's first lines. Given by the gateway: the writer knows nothing of what it holds.
   */
  readonly snapshot: SnapshotSource;
  /** How a snapshot is built (tests drive a build a session at a time); PACE by default. */
  readonly pace?: Pace;
  /** Told of a rotation that failed (the journal goes on in the same file). */
  readonly warn?: (message: string) => void;
  /** The clock files' ages are measured by. */
  readonly now?: () => number;
}

/** Where the next live file is prepared before it takes the live file's name. */
export const nextName = (path: string): string => `${path}.next`;

/**
 * Makes the prepared `<path>.next` (`nfd`) the live file: `last` appended (its last parts and
 * head), both files synced, the live file renamed to rotation `n`, then `.next` renamed to
 * `path`. A crash between the renames leaves `.next` and no live file: `recoverRotation`
 * finishes the job at start. The old descriptor is closed; `nfd` is the live file's from now on.
 */
export function rotateFile(path: string, fd: number, nfd: number, last: Buffer, n: number): void {
  writeAll(nfd, last);
  fdatasyncSync(nfd);
  fdatasyncSync(fd);
  const rotated = rotatedName(path, n);
  renameSync(path, rotated);
  try {
    renameSync(nextName(path), path);
  } catch (err) {
    // The journal goes on in the old file: it takes its name back.
    renameSync(rotated, path);
    throw err;
  }
  closeSync(fd);
}

/**
 * Deletes the oldest rotated files beyond `keep` that are older than `keepFor`; returns how
 * many beyond `keep` are still there (too young). A file's age is the time since its last
 * write (its mtime): the writer writes nothing to it after the rename, so that is its newest
 * record, and it costs a stat, not a read. Only the oldest go, in order: the files kept are
 * one unbroken chain (verify), even if a later file's mtime is older.
 */
export function pruneRotated(
  path: string,
  { keep, keepFor }: { keep: number; keepFor: number },
  segments: Segments,
  now: number,
): number {
  const rotated = listRotated(path);
  const beyond = rotated.slice(0, Math.max(0, rotated.length - keep));
  let gone = 0;
  for (const r of beyond) {
    const stat = statSync(r.path, { throwIfNoEntry: false });
    if (stat !== undefined) {
      if (now - stat.mtimeMs < keepFor) break;
      unlinkSync(r.path);
    }
    segments.deleted(r.path);
    gone++;
  }
  return beyond.length - gone;
}

/**
 * A rotation cut short by a crash: `.next` beside a live file was never used (dropped);
 * `.next` without one is the new live file (the old one was renamed already).
 */
export function recoverRotation(path: string): void {
  const next = nextName(path);
  if (!existsSync(next)) return;
  try {
    if (existsSync(path)) unlinkSync(next);
    else renameSync(next, path);
  } catch (err) {
    throw new TrajgateError('E_JOURNAL_WRITE', systemMessage(err, { key: 'journal.path' }));
  }
}

/** The next rotation's number: one past the highest on disk. */
export function nextRotation(path: string): number {
  return (listRotated(path).at(-1)?.n ?? 0) + 1;
}

function writeAll(fd: number, buf: Buffer): void {
  for (let done = 0; done < buf.length;) {
    const n = writeSync(fd, buf, done, buf.length - done);
    if (n === 0) throw new Error('the file accepted no bytes');
    done += n;
  }
}

/**
 * A writer's side of rotation: when the live file is due, the file operations, and where the
 * live file starts in the offset space of all the journal's files (files.ts), which a journal
 * without rotation has too (its rotated files, if any, from before).
 */
export class Rotation {
  readonly #path: string;
  readonly #options: RotateOptions | undefined;
  readonly #segments: Segments;
  /** Where the live file starts among all the journal's bytes. */
  base: number;
  /** The bytes of the live file's snapshot (parts and head; 0: none). */
  #fresh: number;
  /** Size at which to try again after a failed rotation. */
  #retryAt = 0;
  /** The live file's size when last asked (a build that fails later retries after it). */
  #size = 0;
  #next: number;
  /** The snapshot being built for the next rotation (one at a time). */
  #build: SnapshotBuild | null = null;
  /** Rotated files beyond `keep` that `keepFor` held at the last prune, and when it ran. */
  #held = 0;
  #prunedAt = -Infinity;

  /** `fresh`: the bytes of the snapshot the live file starts with (0: none). */
  constructor(path: string, options: RotateOptions | undefined, fresh = 0) {
    this.#path = path;
    this.#options = options && options.bytes > 0 ? options : undefined;
    this.#segments = Segments.scan(path);
    this.base = this.#segments.live.base;
    this.#fresh = fresh;
    registerSegments(path, this.#segments);
    this.#next = this.#options ? nextRotation(path) : 1;
    this.#options?.snapshot.onChange?.((session) => this.#build?.changed(session, false));
  }

  /**
   * Asked before each record, with the live file's `size`: starts a snapshot build once the
   * file holds `bytes` beyond its own snapshot (whatever that snapshot's size); true when a
   * built snapshot waits for `rotate`, to be sealed before the record.
   */
  ready(size: number): boolean {
    const o = this.#options;
    if (o === undefined) return false;
    this.#size = size;
    if (this.#build !== null) return this.#build.ready;
    if (size - this.#fresh >= o.bytes && size >= this.#retryAt) this.#start(o);
    return false;
  }

  /** Each record as it is stamped: the sessions it changes are written again by a build. */
  touched(record: Unstamped<JournalRecord>): void {
    const build = this.#build;
    if (build === null) return;
    const touched = (this.#options as RotateOptions).snapshot.touches(record);
    if (touched === 'all') build.changedAll();
    else if (touched !== null) build.changed(touched.session, touched.gone);
  }

  /** The snapshot build under way, until it is ready (then the next record rotates). */
  get building(): Promise<void> | null {
    return this.#build === null || this.#build.ready ? null : this.#build.settled;
  }

  #start(o: RotateOptions): void {
    const build = new SnapshotBuild(nextName(this.#path), o.snapshot, o.pace ?? PACE, (err) => {
      if (this.#build === build) this.#build = null;
      this.#failed(err);
    });
    this.#build = build;
  }

  /**
   * Seals the built snapshot (`ready` said so) and rotates the live file (`fd`, `size` bytes):
   * the new one starts with the parts and `line(fields)`, the head whose `parts`, `digest` and
   * `state` fields are given to it. Returns the new descriptor, the head and where it starts,
   * or null when the rotation failed (told to `warn`; tried again 1 MiB later).
   */
  rotate(
    fd: number,
    size: number,
    line: (fields: string) => string,
  ): { fd: number; text: string; at: number } | null {
    const o = this.#options as RotateOptions;
    const build = this.#build as SnapshotBuild;
    this.#build = null;
    let text: string;
    let sealed: ReturnType<SnapshotBuild['seal']>;
    try {
      sealed = build.seal();
      const state = JSON.stringify(o.snapshot.head());
      text = line(`"parts":${sealed.parts},"digest":"${sealed.digest}","state":${state}`);
      const last = Buffer.concat([sealed.rest, Buffer.from(text + '\n')]);
      rotateFile(this.#path, fd, sealed.fd, last, this.#next);
    } catch (err) {
      build.abandon();
      this.#size = size;
      this.#failed(err);
      return null;
    }
    this.#segments.rotated(rotatedName(this.#path, this.#next++), this.base + size);
    this.base += size;
    this.#fresh = sealed.bytes + Buffer.byteLength(text) + 1;
    this.#retryAt = 0;
    this.#prune(o);
    return { fd: sealed.fd, text, at: sealed.bytes };
  }

  /** The writer closes: a build under way is dropped with its `.next` file. */
  close(): void {
    this.#build?.abandon();
    this.#build = null;
  }

  #failed(err: unknown): void {
    this.#retryAt = this.#size + (1 << 20);
    this.#options?.warn?.(
      `${this.#path}: rotation failed, the journal goes on in the same file: ${systemMessage(err, { key: 'journal.path' })}`,
    );
  }

  /**
   * After a write failed for want of space: deletes what `keep` and `keepFor` allow now (files
   * age past `keepFor` while the journal is refused), at most once a second, and says why no
   * more could go — or null when `keepFor` holds nothing back (the disk is simply full).
   */
  outOfSpace(): string | null {
    const o = this.#options;
    if (o === undefined) return null;
    if ((o.now ?? Date.now)() - this.#prunedAt >= 1_000) this.#prune(o);
    if (this.#held === 0) return null;
    return (
      `rotation could not free space: the ${this.#held} rotated file(s) beyond journal.keep ` +
      `(${o.keep}) are younger than journal.keepFor (${formatMs(o.keepFor)}) and are kept`
    );
  }

  #prune(o: RotateOptions): void {
    const now = (o.now ?? Date.now)();
    this.#prunedAt = now;
    try {
      this.#held = pruneRotated(this.#path, o, this.#segments, now);
    } catch (err) {
      o.warn?.(
        `${this.#path}: could not delete an old rotated file: ${systemMessage(err, { key: 'journal.path' })}`,
      );
    }
  }
}

/** `7d`, `90m`, `1500ms`: the largest unit that divides `ms`, as the config writes durations. */
function formatMs(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
