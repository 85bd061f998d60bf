import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import type { Shape, Slice } from '../config/parts.js';
import { TrajgateError } from '../errors.js';
import { secretFile } from './secret-file.js';

/** What the link key is read from, at each use (a reload replaces it). */
export const LINK_KEY = { notify: ['linkKey'], journal: ['path'] } as const satisfies Shape;

export type LinkKeyConfig = Slice<typeof LINK_KEY>;

/** Where a generated link key is kept: beside the journal, like the admin token. */
export function linkKeyFile(config: { readonly journal: Pick<Config['journal'], 'path'> }): string {
  return join(dirname(config.journal.path), 'link-key');
}

/**
 * The key that signs decision links: `notify.linkKey`, or else a random key generated once
 * and kept in linkKeyFile with mode 0600 (read at start, so a problem with it stops the start).
 * Read on each use, so that a reload's `notify.linkKey` applies (and voids older links).
 */
export function linkKey(config: LinkKeyConfig): () => Buffer {
  let generated = config.notify.linkKey === undefined ? fileKey(linkKeyFile(config)) : null;
  return () => {
    const configured = config.notify.linkKey;
    if (configured !== undefined) return Buffer.from(configured, 'utf8');
    return (generated ??= fileKey(linkKeyFile(config)));
  };
}

function fileKey(file: string): Buffer {
  const key = secretFile(file, 'the link key');
  if (key.length < 16)
    throw new TrajgateError('E_CONFIG_READ', `${file}: the link key is shorter than 16 characters`);
  return Buffer.from(key, 'utf8');
}
