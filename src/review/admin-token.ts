import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import { errnoCode, TrajgateError } from '../errors.js';

export interface AdminTokens {
  readonly tokens: readonly { readonly name: string; readonly token: string }[];
  /** The generated token's file, when the config names no token. */
  readonly file: string | null;
}

/** Where a generated admin token is kept: beside the journal, in the data folder. */
export function adminTokenFile(config: Pick<Config, 'journal'>): string {
  return join(dirname(config.journal), 'admin-token');
}

/**
 * The admin bearer tokens: `admin.token` (named "operator") and `admin.tokens`, or else a
 * random token generated once and kept beside the journal with mode 0600.
 */
export function adminTokens(config: Config): AdminTokens {
  const configured = [
    ...(config.admin.token ? [{ name: 'operator', token: config.admin.token }] : []),
    ...config.admin.tokens,
  ];
  if (configured.length > 0) return { tokens: configured, file: null };
  const file = adminTokenFile(config);
  try {
    return { tokens: [{ name: 'operator', token: readFileSync(file, 'utf8').trim() }], file };
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') {
      throw new TrajgateError(
        'E_CONFIG_READ',
        `${file}: cannot read the admin token: ${(err as Error).message}`,
      );
    }
  }
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, token + '\n', { mode: 0o600, flag: 'wx' });
  return { tokens: [{ name: 'operator', token }], file };
}
