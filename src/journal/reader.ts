import { closeSync, openSync, readSync, writeFileSync, ftruncateSync, writeSync } from 'node:fs';
import { errnoCode, TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import { currentNames } from './old-names.js';
import type { JournalRecord } from './records.js';
import { assemble, isPart, SnapshotParts } from './snapshot-read.js';

export interface ReadResult {
  /** Highest `seq` seen (0 for a new journal). */
  readonly lastSeq: number;
  readonly records: number;
}

const CHUNK = 1 << 20;

/**
 * Streams a journal from disk, calling `onRecord` for each record in order (with its line's
 * offset and length without the newline), in constant memory.
 * A last line cut short by a crash (no newline, not valid JSON) is moved to `<file>.torn-<n>`,
 * cut from the journal and reported through `warn`; any other bad line throws
 * E_JOURNAL_CORRUPT with its line number, because state rebuilt past it would be wrong.
 * `repair: false` reads without changing the file (for tools that only look).
 * A snapshot's leading part lines (snapshot-read.ts) come as one record, at its head's line.
 */
export function readJournal(
  path: string,
  onRecord: (record: JournalRecord, line: number, offset: number, bytes: number) => void,
  warn: (message: string) => void,
  options: { repair?: boolean } = {},
): ReadResult {
  let fd: number;
  try {
    fd = openSync(path, options.repair === false ? 'r' : 'r+');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return { lastSeq: 0, records: 0 };
    // Start opens it to repair a torn last line; tools only read.
    const repair = options.repair !== false;
    throw osError(repair ? 'E_JOURNAL_WRITE' : 'E_INPUT_READ', err, {
      op: repair ? 'open' : 'read',
      what: 'the journal',
      path,
      key: 'journal.path',
    });
  }
  try {
    let lastSeq = 0;
    let records = 0;
    let line = 0;
    let parts: SnapshotParts | null = null;
    eachLine(fd, (bytes, offset, whole) => {
      line++;
      if (records === 0 && whole && isPart(bytes)) {
        parts ??= new SnapshotParts({ keep: true });
        try {
          parts.add(bytes);
        } catch (err) {
          throw corrupt(path, line, (err as Error).message);
        }
        return;
      }
      let record = parseLine(bytes.toString('utf8'), path, line, whole);
      if (record && records === 0 && (parts !== null || 'parts' in record)) {
        record = sealed(record, parts ?? new SnapshotParts({ keep: true }), path, line);
        parts = null;
      }
      if (record) {
        onRecord(record, line, offset, bytes.length);
        records++;
        if (record.seq > lastSeq) lastSeq = record.seq;
        if (!whole && options.repair !== false) writeSync(fd, '\n', offset + bytes.length);
      } else if (!whole && options.repair !== false) {
        const aside = `${path}.torn-${offset}`;
        writeFileSync(aside, bytes, { mode: 0o600 });
        ftruncateSync(fd, offset);
        warn(
          `${path}:${line}: last line was cut short by a crash (${bytes.length} bytes); skipped, kept in ${aside}`,
        );
      } else if (!whole) {
        warn(
          `${path}:${line}: last line was cut short by a crash (${bytes.length} bytes); skipped`,
        );
      }
    });
    if (parts !== null) throw corrupt(path, line, 'snapshot part lines without their head');
    return { lastSeq, records };
  } finally {
    closeSync(fd);
  }
}

/**
 * Calls `onLine` with each line's bytes (without the newline) and its file offset, in order and
 * in constant memory; `whole` is false for a last line with no newline.
 */
export function eachLine(
  fd: number,
  onLine: (bytes: Buffer, offset: number, whole: boolean) => void,
): void {
  let offset = 0; // file offset of the line being read
  // The start of a line longer than what one read left (a snapshot can be megabytes): its
  // pieces, joined once its newline comes, so a long line costs one copy, not one per read.
  let pieces: Buffer[] = [];
  const buf = Buffer.allocUnsafe(CHUNK);
  for (;;) {
    const n = readSync(fd, buf, 0, CHUNK, null);
    if (n === 0) break;
    const data = buf.subarray(0, n);
    let start = 0;
    let nl = data.indexOf(10);
    if (nl !== -1 && pieces.length > 0) {
      const line = Buffer.concat([...pieces, data.subarray(0, nl)]);
      pieces = [];
      onLine(line, offset, true);
      offset += line.length + 1;
      start = nl + 1;
      nl = data.indexOf(10, start);
    }
    for (; nl !== -1; nl = data.indexOf(10, start)) {
      onLine(data.subarray(start, nl), offset, true);
      offset += nl - start + 1;
      start = nl + 1;
    }
    // `buf` is read into again: what is kept of it is copied.
    if (start < n) pieces.push(Buffer.from(data.subarray(start)));
  }
  if (pieces.length > 0) onLine(Buffer.concat(pieces), offset, false);
}

/** A whole line must be a record; an unterminated last line may be torn (returns null). */
function parseLine(text: string, path: string, line: number, whole: boolean): JournalRecord | null {
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    if (!whole) return null;
    throw corrupt(path, line, 'not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    if (!whole) return null;
    throw corrupt(path, line, 'not a JSON object');
  }
  const { seq, type } = value as { seq?: unknown; type?: unknown };
  if (!Number.isSafeInteger(seq) || (seq as number) < 1 || typeof type !== 'string') {
    if (!whole) return null;
    throw corrupt(path, line, 'a record needs a positive integer "seq" and a string "type"');
  }
  return currentNames(value) as JournalRecord;
}

/** The head after its parts: the one snapshot record they make, if they are what it sealed. */
function sealed(
  head: JournalRecord,
  parts: SnapshotParts,
  path: string,
  line: number,
): JournalRecord {
  if (head.type !== 'snapshot') throw corrupt(path, line, 'snapshot parts not followed by a head');
  try {
    return assemble(head, parts);
  } catch (err) {
    throw corrupt(path, line, (err as Error).message);
  }
}

function corrupt(path: string, line: number, why: string): TrajgateError {
  return new TrajgateError(
    'E_JOURNAL_CORRUPT',
    `${path}:${line}: corrupt journal line (${why}); refusing to start on a journal that cannot be read back — move the file aside or repair that line`,
  );
}
