/**
 * The journal's files as rotation handles them on disk: the renames that make a prepared file
 * live, deleting old rotated files, finishing a rotation a crash cut short.
 */
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
import { listRotated, rotatedName } from './files.js';
import type { Segments } from './files.js';

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
