import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { Guard } from '../guard/guard.js';
import { readJournal } from './reader.js';
import { applyRecord } from './rebuild.js';
import { JournalWriter } from './writer.js';

export interface OpenedJournal {
  readonly writer: JournalWriter;
  /** Records read back from an existing journal. */
  readonly restored: number;
}

/** Reads an existing journal into the guard, then opens it for appending after the last record. */
export function openJournal(
  path: string,
  guard: Guard,
  options: { fsyncMs: number; warn: (message: string) => void; now?: () => number },
): OpenedJournal {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new TrajgateError(
      'E_JOURNAL_WRITE',
      `${dirname(path)}: cannot create journal folder: ${(err as Error).message}`,
    );
  }
  const { lastSeq, records } = readJournal(
    path,
    (record, line) => {
      try {
        applyRecord(guard, record);
      } catch (err) {
        if (!isTrajgateError(err)) throw err;
        throw new TrajgateError(err.code, `${path}:${line}: ${err.message}`);
      }
    },
    options.warn,
  );
  const writer = new JournalWriter(path, {
    lastSeq,
    fsyncMs: options.fsyncMs,
    ...(options.now ? { now: options.now } : {}),
  });
  return { writer, restored: records };
}
