import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { errnoCode } from '../errors.js';
import { osError } from '../os-error.js';

/**
 * A secret kept beside the journal (the admin token, the link key): the file's text, or a
 * random one generated once and written with mode 0600 (never over a file another start made
 * meanwhile). Errors name the file, what it is and `journal.path`, which places it.
 */
export function secretFile(file: string, what: string): string {
  const place = { what, path: file, key: 'journal.path' };
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw osError('E_CONFIG_READ', err, { op: 'read', ...place });
  }
  const secret = randomBytes(32).toString('base64url');
  try {
    writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw osError('E_JOURNAL_WRITE', err, { op: 'create', ...place });
  }
  return secret;
}
