import { accessSync, constants, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isTrajgateError } from '../errors.js';
import { listRotated } from '../journal/files.js';
import { nearestExisting, osMessage, runningAs } from '../os-error.js';
import { adminTokenFile } from '../review/admin-token.js';
import { linkKeyFile } from '../review/link-key.js';
import { readCaFile } from '../tls/ca-read.js';
import { CA_CERT, CA_KEY } from '../tls/ca.js';
import type { Config } from '../config/load.js';
import { EMBEDDED_DEFAULT } from '../config/load.js';
import type { Problem } from '../config/problems.js';

const { R_OK, W_OK, X_OK } = constants;
const JOURNAL = ['journal', 'path'];

/**
 * What `start` will create, write and read as the user running this (access(2), which honours
 * ACLs, read-only mounts and root's privileges), checked without doing any of it: the journal's
 * folder and the folders to create above it, the journal and its rotated files, the admin token
 * and link key kept beside it, the captures' folder, and, with `tls.intercept`, the CA.
 */
export function dataAccess(config: Config): Problem[] {
  const kind = `cannot use trajgate's files as ${runningAs()}`;
  const problems: Problem[] = [];
  // The embedded default's data folder is placed by the environment (config/load.ts dataHome).
  const key = config.source === EMBEDDED_DEFAULT ? 'TRAJGATE_DATA' : 'journal.path';
  /** Whether `mode` is allowed on `path`, or on the folder it will be created in. */
  const check = (path: string, mode: number, what: string, op: string): boolean => {
    const err = denied(nearestExisting(path), mode);
    if (err === null) return true;
    const folder = (mode & X_OK) !== 0;
    const text = `${key}: ${osMessage(err, { op, what, path, key, folder })}`;
    problems.push({ path: JOURNAL, kind, text });
    return false;
  };
  const dir = dirname(config.journal.path);
  const folder = "the journal's folder";
  if (!check(dir, W_OK | X_OK, folder, exists(dir) ? 'write in' : 'create'))
    return [...problems, ...ca(config)];
  const files: [string, string, number][] = [[config.journal.path, 'the journal', R_OK | W_OK]];
  try {
    for (const r of listRotated(config.journal.path))
      files.push([r.path, 'a rotated journal file', R_OK]);
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    problems.push({ path: JOURNAL, kind, text: `${key}: ${err.message}` });
  }
  if (config.admin.token === undefined && config.admin.tokens.length === 0)
    files.push([adminTokenFile(config), 'the admin token', R_OK]);
  if (config.notify.linkKey === undefined) files.push([linkKeyFile(config), 'the link key', R_OK]);
  if (config.capture.bodies)
    files.push([join(dir, 'captures'), "the captures' folder", W_OK | X_OK]);
  for (const [path, what, mode] of files)
    if (exists(path)) check(path, mode, what, mode & W_OK ? 'write' : 'read');
  return [...problems, ...ca(config)];
}

/** The CA's files, read as start reads them (tls/ca-read.ts), when TLS is intercepted. */
function ca(config: Config): Problem[] {
  if (config.tls.intercept.length === 0) return [];
  const texts = new Set<string>();
  for (const name of [CA_CERT, CA_KEY]) {
    try {
      readCaFile(join(config.tls.ca, name), config.tls.ca);
    } catch (err) {
      if (isTrajgateError(err)) texts.add(err.message);
      else throw err;
    }
  }
  return [...texts].map((text) => ({
    path: ['tls', 'ca'],
    reads: [['tls', 'intercept']],
    code: 'E_CONFIG_READ' as const,
    text: `tls.ca: ${text}`,
  }));
}

/**
 * The error access(2) gives for `mode` on `path`, or null when it is allowed; a file where a
 * folder is due is ENOTDIR, as creating inside it would be.
 */
function denied(path: string, mode: number): unknown {
  try {
    if (mode & X_OK && !statSync(path).isDirectory())
      return Object.assign(new Error(`not a directory: ${path}`), { code: 'ENOTDIR' });
    accessSync(path, mode);
    return null;
  } catch (err) {
    return err;
  }
}

function exists(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false }) !== undefined;
}
