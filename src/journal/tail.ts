import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import type { JournalRecord } from './records.js';

const CHUNK = 1 << 16;

/**
 * Visits a journal's records newest first, reading from the end in chunks, until `visit`
 * returns false: the latest events of a session cost what they are, not the whole file.
 * Lines that do not parse (a torn last line) are passed over.
 */
export function readBackwards(path: string, visit: (record: JournalRecord) => boolean): void {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  try {
    let pos = fstatSync(fd).size;
    let carry = Buffer.alloc(0);
    const emit = (line: Buffer): boolean => {
      if (line.length === 0) return true;
      let record: JournalRecord;
      try {
        record = JSON.parse(line.toString('utf8')) as JournalRecord;
      } catch {
        return true;
      }
      return visit(record);
    };
    while (pos > 0) {
      const len = Math.min(CHUNK, pos);
      pos -= len;
      const chunk = Buffer.allocUnsafe(len);
      readSync(fd, chunk, 0, len, pos);
      const buf = carry.length > 0 ? Buffer.concat([chunk, carry]) : chunk;
      let end = buf.length;
      for (let i = buf.length - 1; i >= 0; i--) {
        if (buf[i] !== 10) continue;
        if (!emit(buf.subarray(i + 1, end))) return;
        end = i;
      }
      carry = Buffer.from(buf.subarray(0, end));
    }
    emit(carry);
  } finally {
    closeSync(fd);
  }
}
