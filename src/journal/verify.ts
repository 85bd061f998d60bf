import { closeSync, openSync } from 'node:fs';
import { basename } from 'node:path';
import { TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import { digestOf, GENESIS } from './chain.js';
import { listRotated, sizeOf } from './files.js';
import { eachLine } from './reader.js';
import { isPart, SnapshotParts } from './snapshot-read.js';

const PREV = /^\{"seq":\d+,"ts":"[^"]*","prev":"([0-9a-f]{64})",("type":"snapshot")?/;
const NO_PREV = /^\{"seq":\d+,"ts":"[^"]*","(?!prev")/;
/** A version 2 snapshot's head: what seals its part lines (the writer puts them first). */
const HEAD = /^,"version":\d+,"parts":(\d+),"digest":"([0-9a-f]{64})"/;

export interface Verified {
  readonly records: number;
  /** A torn last line of the last file (a crash cut its write short), as a warning. */
  readonly torn: string | null;
}

/**
 * Checks the hash chain of journal files given in order (each later file continues the one
 * before it: a rotated-to file's snapshot carries the previous file's last line's digest),
 * streaming in constant memory. The first line that does not follow throws E_CHAIN_BROKEN
 * naming FILE:LINE. A first file that starts with a snapshot is accepted as a start (older
 * rotated files were deleted by `keep`). A version 2 snapshot's part lines lead its file: the
 * head's `digest` and `parts` must seal them (snapshot-read.ts). A torn last line of the last file is what a crash
 * leaves (the chain before it is whole, and `trajgate start` moves it aside): reported in
 * `torn`, not thrown; a torn line anywhere else is. Never changes a file.
 */
export function verifyChain(files: readonly string[]): Verified {
  let prev = GENESIS;
  let before: string | null = null;
  let records = 0;
  let torn: string | null = null;
  files.forEach((file, f) => {
    let line = 0;
    let first = true;
    const parts = new SnapshotParts({ keep: false });
    eachLineOf(file, (bytes, whole) => {
      line++;
      if (torn !== null) throw broken(file, line - 1, 'torn (cut short), and lines follow it');
      if (!whole) {
        if (f < files.length - 1) throw broken(file, line, 'torn (cut short)');
        torn = `${file}:${line}: torn last line (${bytes.length} bytes cut short by a crash); the chain before it is intact, and trajgate start moves it aside`;
        return;
      }
      if (first && isPart(bytes)) {
        parts.add(bytes);
        return;
      }
      // The writer puts prev right after seq and ts: no parse needed to find it.
      const head = bytes.toString('utf8', 0, 300);
      const found = PREV.exec(head);
      if (!found) {
        const why = NO_PREV.test(head)
          ? first
            ? 'carries no chain (no prev: written with journal.chain false, or before trajgate had a chain)'
            : 'no prev (written before the chain, or edited)'
          : 'no prev (not a journal line, or edited)';
        throw broken(file, line, why);
      }
      if (first) checkParts(found, head, parts, file, line);
      const startsKept = f === 0 && first && found[2] !== undefined;
      if (found[1] !== prev && !startsKept) throw broken(file, line, mismatch(first, line, before));
      prev = digestOf(bytes);
      first = false;
      records++;
    });
    if (first && parts.lines > 0)
      throw broken(file, line, 'snapshot part lines not followed by their head');
    before = file;
  });
  return { records, torn };
}

/** A file's first record after part lines must be the head that seals them (count and digest). */
function checkParts(
  found: RegExpExecArray,
  head: string,
  parts: SnapshotParts,
  file: string,
  line: number,
): void {
  const sealing = found[2] === undefined ? null : HEAD.exec(head.slice(found[0].length));
  if (sealing === null) {
    if (parts.lines > 0) throw broken(file, line, 'snapshot part lines not followed by their head');
    return;
  }
  const why = parts.mismatch({ parts: Number(sealing[1]), digest: sealing[2] });
  if (why !== null) throw broken(file, line, why);
}

function mismatch(first: boolean, line: number, before: string | null): string {
  if (!first) return `prev does not match line ${line - 1} (edited, removed or inserted)`;
  if (before === null)
    return "prev is not 64 zeros (a journal's first line) (edited, removed or inserted)";
  return `prev does not match the last line of ${before}: the chain does not follow from that file (a file between them deleted, or either edited)`;
}

/**
 * The configured journal's files, oldest first: rotated ones, then the live one. A gap in the
 * rotation numbers is a deleted middle file: E_CHAIN_BROKEN naming it.
 */
export function chainFiles(path: string): string[] {
  const rotated = listRotated(path);
  for (let i = 1; i < rotated.length; i++) {
    const a = rotated[i - 1]!;
    const b = rotated[i]!;
    if (b.n !== a.n + 1) {
      throw new TrajgateError(
        'E_CHAIN_BROKEN',
        `${b.path}:1: the chain does not follow from ${basename(a.path)}: rotated file(s) ${a.n + 1}..${b.n - 1} between them are missing (deleted)`,
      );
    }
  }
  const files = rotated.map((r) => r.path);
  if (sizeOf(path) >= 0 || files.length === 0) files.push(path);
  return files;
}

function broken(file: string, line: number, why: string): TrajgateError {
  return new TrajgateError('E_CHAIN_BROKEN', `${file}:${line}: ${why}`);
}

/** Calls `onLine` with each line of `file` (see reader.ts eachLine). */
function eachLineOf(file: string, onLine: (bytes: Buffer, whole: boolean) => void): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw osError('E_INPUT_READ', err, { op: 'read', path: file });
  }
  try {
    eachLine(fd, (bytes, _offset, whole) => onLine(bytes, whole));
  } finally {
    closeSync(fd);
  }
}
