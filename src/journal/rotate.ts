import {
  closeSync,
  existsSync,
  fdatasyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { listRotated, registerSegments, rotatedName, Segments } from './files.js';

/** What a snapshot record's `version` says; a reader refuses any other (E_JOURNAL_CORRUPT). */
export const SNAPSHOT_VERSION = 1;

export interface RotateOptions {
  /** The live file is rotated once it holds this many bytes (0: never). */
  readonly bytes: number;
  /** Rotated files kept; the oldest beyond are deleted. */
  readonly keep: number;
  /**
   * The whole state a restart rebuilds, as of the last record written (JSON-ready): the new
   * file's first line. Given by the gateway: the writer knows nothing of what it holds.
   */
  readonly snapshot: () => unknown;
  /** Told of a rotation that failed (the journal goes on in the same file). */
  readonly warn?: (message: string) => void;
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

/** Deletes the oldest rotated files beyond `keep`. */
export function pruneRotated(path: string, keep: number, segments: Segments): void {
  const rotated = listRotated(path);
  for (const r of rotated.slice(0, Math.max(0, rotated.length - keep))) {
    unlinkSync(r.path);
    segments.deleted(r.path);
  }
}

/**
 * A rotation cut short by a crash: `.next` beside a live file was never used (dropped);
 * `.next` without one is the new live file (the old one was renamed already).
 */
export function recoverRotation(path: string): void {
  const next = nextName(path);
  if (!existsSync(next)) return;
  if (existsSync(path)) unlinkSync(next);
  else renameSync(next, path);
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
        `${this.#path}: rotation failed, the journal goes on in the same file: ${(err as Error).message}`,
      );
      return null;
    }
    this.#segments.rotated(rotatedName(this.#path, this.#next++), this.base + size);
    this.base += size;
    this.#fresh = Buffer.byteLength(text) + 1;
    this.#retryAt = 0;
    try {
      pruneRotated(this.#path, o.keep, this.#segments);
    } catch (err) {
      o.warn?.(`${this.#path}: could not delete an old rotated file: ${(err as Error).message}`);
    }
    return { fd: nfd, text };
  }
}
