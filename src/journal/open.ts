import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { digestAt, GENESIS } from './chain.js';
import type { JournalRecord } from './records.js';
import { readJournal } from './reader.js';
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
  },
): OpenedJournal {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new TrajgateError(
      'E_JOURNAL_WRITE',
      `${dirname(path)}: cannot create journal folder: ${(err as Error).message}`,
    );
  }
  // Where the last whole line is: the chain goes on from it (a torn line was moved aside).
  let lastOffset = 0;
  let lastBytes = -1;
  const { lastSeq, records } = readJournal(
    path,
    (record, line, offset, bytes) => {
      lastOffset = offset;
      lastBytes = bytes;
      try {
        apply(record);
        options.onAppend?.(record, record.seq, offset, bytes);
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
  });
  return { writer, restored: records };
}
