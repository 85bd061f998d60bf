import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { osError } from '../os-error.js';
import { digestAt, GENESIS } from './chain.js';
import type { JournalRecord, SnapshotRecord } from './records.js';
import { Segments } from './files.js';
import { readJournal } from './reader.js';
import type { RotateOptions } from './rotate.js';
import { recoverRotation } from './rotate-files.js';
import { checkVersion } from './snapshot-read.js';
import type { WriterOptions } from './writer.js';
import { JournalWriter } from './writer.js';

export interface OpenedJournal {
  readonly writer: JournalWriter;
  /** Records read back from an existing journal. */
  readonly restored: number;
}

/**
 * Reads an existing journal through `apply` (rebuilding state), then opens it for appending.
 * `onAppend` sees every record in the file: each one read back, then each one written.
 */
export function openJournal(
  path: string,
  apply: (record: JournalRecord) => void,
  options: {
    fsyncMs: number;
    warn: (message: string) => void;
    now?: () => number;
    onWrite?: (seconds: number) => void;
    health?: WriterOptions['health'];
    onAppend?: WriterOptions['onAppend'];
    /** Told of each record written from now on (none read back): see WriterOptions. */
    onWritten?: WriterOptions['onWritten'];
    rotate?: RotateOptions;
    chain?: boolean;
    /** A live file's first line is a snapshot: its state, to install instead of a replay. */
    restore?: (state: unknown) => void;
  },
): OpenedJournal {
  makeJournalFolder(path);
  recoverRotation(path);
  // Offsets run on across the rotated files (files.ts): the live file starts after them.
  const base = Segments.scan(path).live.base;
  // Where the last whole line is: the chain goes on from it (a torn line was moved aside).
  let lastOffset = 0;
  let lastBytes = -1;
  // The snapshot the live file starts with (its parts and head): rotation counts past it.
  let snapshotBytes = 0;
  const { lastSeq, records } = readJournal(
    path,
    (record, line, offset, bytes) => {
      const first = lastBytes < 0;
      lastOffset = offset;
      lastBytes = bytes;
      try {
        if (record.type === 'snapshot') {
          restoreSnapshot(record, first, options.restore);
          if (first) snapshotBytes = offset + bytes + 1;
        } else apply(record);
        options.onAppend?.(record, record.seq, base + offset, bytes);
      } catch (err) {
        if (!isTrajgateError(err)) throw err;
        throw new TrajgateError(err.code, `${path}:${line}: ${err.message}`);
      }
    },
    options.warn,
  );
  const writer = new JournalWriter(path, {
    lastSeq,
    prev: lastBytes < 0 ? GENESIS : digestAt(path, lastOffset, lastBytes),
    fsyncMs: options.fsyncMs,
    ...(options.now ? { now: options.now } : {}),
    ...(options.onWrite ? { onWrite: options.onWrite } : {}),
    ...(options.health ? { health: options.health } : {}),
    ...(options.onAppend ? { onAppend: options.onAppend } : {}),
    ...(options.onWritten ? { onWritten: options.onWritten } : {}),
    ...(options.rotate ? { rotate: options.rotate, snapshotBytes } : {}),
    ...(options.chain === false ? { chain: false } : {}),
  });
  return { writer, restored: records };
}

/**
 * The live file's first record may be a snapshot (it was rotated to): the state up to it, so
 * nothing before is read. A version this trajgate does not know is refused rather than guessed
 * at. A snapshot anywhere else changes nothing (the lines before it were applied).
 */
function restoreSnapshot(
  record: SnapshotRecord,
  first: boolean,
  restore: ((state: unknown) => void) | undefined,
): void {
  checkVersion(record.version, '; start it with the trajgate that wrote the journal');
  if (first) restore?.(record.state);
}

/** The journal's folder, made (mode 0700) when missing: its files and the keys beside it go there. */
export function makeJournalFolder(path: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw osError('E_JOURNAL_WRITE', err, {
      op: 'create',
      what: "the journal's folder",
      path: dirname(path),
      key: 'journal.path',
      folder: true,
    });
  }
}
