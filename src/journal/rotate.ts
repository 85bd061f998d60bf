import { systemMessage } from '../os-error.js';
import { registerSegments, rotatedName, Segments } from './files.js';
import { nextName, nextRotation, pruneRotated, rotateFile } from './rotate-files.js';
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
