import { closeSync, openSync } from 'node:fs';
import { TrajgateError } from '../errors.js';
import { digestOf, GENESIS } from './chain.js';
import { eachLine } from './reader.js';

const PREV = /^\{"seq":\d+,"ts":"[^"]*","prev":"([0-9a-f]{64})",/;

/**
 * Checks the hash chain of journal files given in order (each later file continues the one
 * before it), streaming in constant memory; returns how many records it checked. The first line
 * that does not follow throws E_CHAIN_BROKEN naming FILE:LINE. Never changes a file.
 */
export function verifyChain(files: readonly string[]): number {
  let prev = GENESIS;
  let before: string | null = null;
  let records = 0;
  for (const file of files) {
    let line = 0;
    eachLineOf(file, (bytes, whole) => {
      line++;
      if (!whole) throw broken(file, line, 'torn (cut short)');
      // The writer puts prev right after seq and ts: no parse needed to find it.
      const found = PREV.exec(bytes.toString('utf8', 0, 200));
      if (!found) throw broken(file, line, 'no prev (written before the chain, or edited)');
      if (found[1] !== prev) {
        const what =
          line > 1
            ? `prev does not match line ${line - 1}`
            : before !== null
              ? `prev does not match the last line of ${before}`
              : "prev is not 64 zeros (a journal's first line)";
        throw broken(file, line, `${what} (edited, removed or inserted)`);
      }
      prev = digestOf(bytes);
      records++;
    });
    before = file;
  }
  return records;
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
    throw new TrajgateError('E_INPUT_READ', `${file}: cannot read: ${(err as Error).message}`);
  }
  try {
    eachLine(fd, (bytes, _offset, whole) => onLine(bytes, whole));
  } finally {
    closeSync(fd);
  }
}
