import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import { errnoCode, isTrajgateError, TrajgateError } from '../errors.js';

/** Where a generated link key is kept: beside the journal, like the admin token. */
export function linkKeyFile(config: Pick<Config, 'journal'>): string {
  return join(dirname(config.journal.path), 'link-key');
}

/**
 * The key that signs decision links: `notify.linkKey`, or else a random key generated once
 * and kept in linkKeyFile with mode 0600 (read at start, so a problem with it stops the start).
 * Read on each use, so that a reload's `notify.linkKey` applies (and voids older links).
 */
export function linkKey(config: Pick<Config, 'journal' | 'notify'>): () => Buffer {
  let generated = config.notify.linkKey === undefined ? fileKey(linkKeyFile(config)) : null;
  return () => {
    const configured = config.notify.linkKey;
    if (configured !== undefined) return Buffer.from(configured, 'utf8');
    return (generated ??= fileKey(linkKeyFile(config)));
  };
}

function fileKey(file: string): Buffer {
  try {
    const key = readFileSync(file, 'utf8').trim();
    if (key.length >= 16) return Buffer.from(key, 'utf8');
    throw new TrajgateError('E_CONFIG_READ', `${file}: the link key is shorter than 16 characters`);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') {
      if (isTrajgateError(err)) throw err;
      throw new TrajgateError(
        'E_CONFIG_READ',
        `${file}: cannot read the link key: ${(err as Error).message}`,
      );
    }
  }
  const key = randomBytes(32).toString('base64url');
  writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' });
  return Buffer.from(key, 'utf8');
}
