import {
  closeSync,
  existsSync,
  statSync,
  fdatasyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { TrajgateError } from '../errors.js';
import { systemMessage } from '../os-error.js';
import { listRotated, registerSegments, rotatedName, Segments } from './files.js';

/** What a snapshot record's `version` says; a reader refuses any other (E_JOURNAL_CORRUPT). */
export const SNAPSHOT_VERSION = 1;

export interface RotateOptions {
  /** The live file is rotated once it holds this many bytes (0: never). */
  readonly bytes: number;
  /** Rotated files kept; the oldest beyond are deleted once older than `keepFor`. */
  readonly keep: number;
  /**
   * Milliseconds since its last write before a rotated file beyond `keep` may be deleted: an
   * agent that fills the journal cannot rotate its own records out before anyone looks.
   */
  readonly keepFor: number;
  /**
   * The whole state a restart rebuilds, as of the last record written (JSON-ready): the new
   * file's first line. Given by the gateway: the writer knows nothing of what it holds.
   */
  readonly snapshot: () => unknown;
  /** Told of a rotation that failed (the journal goes on in the same file). */
  readonly warn?: (message: string) => void;
  /** The clock files' ages are measured by. */
  readonly now?: () => number;
}

/** Where the next live file is prepared before it takes the live file's name. */
export const nextName = (path: string): string => `${path}.next`;

/**
 * Makes `first` (a snapshot line) the start of a new live file: written and synced as
 * `<path>.next`, then the live file renamed to rotation `n`, then `.next` renamed to `path`.
 * A crash between the renames leaves `.next` and no live file: `recoverRotation` finishes the
 * job at start. Returns the new file's descriptor; the old one is closed.
 */
export function rotateFile(path: string, fd: number, first: string, n: number): number {
  const next = nextName(path);
  const nfd = openSync(next, 'w', 0o600);
  try {
    writeAll(nfd, Buffer.from(first));
    fdatasyncSync(nfd);
    fdatasyncSync(fd);
    renameSync(path, rotatedName(path, n));
  } catch (err) {
    closeSync(nfd);
    unlinkSync(next);
    throw err;
  }
  renameSync(next, path);
  closeSync(fd);
  return nfd;
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
  /** The size of the live file's snapshot line (0: none known). */
  #fresh = 0;
  /** Size at which to try again after a failed rotation. */
  #retryAt = 0;
  #next: number;
  /** Rotated files beyond `keep` that `keepFor` held at the last prune, and when it ran. */
  #held = 0;
  #prunedAt = -Infinity;

  constructor(path: string, options: RotateOptions | undefined) {
    this.#path = path;
    this.#options = options && options.bytes > 0 ? options : undefined;
    this.#segments = Segments.scan(path);
    this.base = this.#segments.live.base;
    registerSegments(path, this.#segments);
    this.#next = this.#options ? nextRotation(path) : 1;
  }

  /**
   * Whether a live file of `size` bytes is to be rotated before the next record: at `bytes`,
   * and at least twice its snapshot (a state larger than `bytes` must not rotate every record).
   */
  due(size: number): boolean {
    const o = this.#options;
    return o !== undefined && size >= o.bytes && size >= 2 * this.#fresh && size >= this.#retryAt;
  }

  /**
   * Rotates the live file (`fd`, `size` bytes): the new one starts with `line(state)`, the
   * snapshot's JSON text given to it. Returns the new descriptor and first line, or null when
   * the rotation failed (told to `warn`; tried again 1 MiB later).
   */
  rotate(
    fd: number,
    size: number,
    line: (state: string) => string,
  ): { fd: number; text: string } | null {
    const o = this.#options as RotateOptions;
    let text: string;
    let nfd: number;
    try {
      text = line(JSON.stringify(o.snapshot()));
      nfd = rotateFile(this.#path, fd, text + '\n', this.#next);
    } catch (err) {
      this.#retryAt = size + (1 << 20);
      o.warn?.(
        `${this.#path}: rotation failed, the journal goes on in the same file: ${systemMessage(err, { key: 'journal.path' })}`,
      );
      return null;
    }
    this.#segments.rotated(rotatedName(this.#path, this.#next++), this.base + size);
    this.base += size;
    this.#fresh = Buffer.byteLength(text) + 1;
    this.#retryAt = 0;
    this.#prune(o);
    return { fd: nfd, text };
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
