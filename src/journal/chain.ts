import { hash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

/**
 * The journal's hash chain: each line carries `prev`, the SHA-256 (hex) of the line before it
 * (its bytes without the newline), so an edited, removed or inserted line breaks the next one's
 * `prev` (`trajgate verify`). The first line of a journal carries GENESIS.
 */
export const GENESIS = '0'.repeat(64);

/**
 * A record without `prev`: the chain belongs to one journal file, not to what was decided, so
 * views, other gateways and a rebuilt store see the same record before and after a restart.
 */
export function unchained<T extends { readonly prev?: string }>(record: T): Omit<T, 'prev'> {
  const { prev: _prev, ...rest } = record;
  return rest;
}

/** One-shot crypto.hash: about half the cost of createHash().update().digest() per line. */
export function digestOf(line: string | Uint8Array): string {
  return hash('sha256', line, 'hex');
}

/** The digest of `bytes` bytes at `offset` of `path` (the last line read back at start). */
export function digestAt(path: string, offset: number, bytes: number): string {
  const buf = Buffer.allocUnsafe(bytes);
  const fd = openSync(path, 'r');
  try {
    for (let done = 0; done < bytes;) {
      const n = readSync(fd, buf, done, bytes - done, offset + done);
      if (n === 0) throw new Error(`${path}: ended before the last line was read`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  return digestOf(buf);
}
