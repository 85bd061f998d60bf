import { createHash, timingSafeEqual } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { Config } from '../config/load.js';
import type { Shape, Slice } from '../config/parts.js';
import { secretFile } from './secret-file.js';

export interface AdminTokens {
  readonly tokens: readonly { readonly name: string; readonly token: string }[];
  /** The generated token's file, when the config names no token. */
  readonly file: string | null;
}

/** What the admin tokens are read from (a reload replaces them). */
export const ADMIN = { admin: ['token', 'tokens'], journal: ['path'] } as const satisfies Shape;

export type AdminConfig = Slice<typeof ADMIN>;

/** Where a generated admin token is kept: beside the journal, in the data folder. */
export function adminTokenFile(config: {
  readonly journal: Pick<Config['journal'], 'path'>;
}): string {
  return join(dirname(config.journal.path), 'admin-token');
}

/**
 * The admin bearer tokens: `admin.token` (named "operator") and `admin.tokens`, or else a
 * random token generated once and kept beside the journal with mode 0600.
 */
export function adminTokens(config: AdminConfig): AdminTokens {
  const configured = [
    ...(config.admin.token ? [{ name: 'operator', token: config.admin.token }] : []),
    ...config.admin.tokens,
  ];
  if (configured.length > 0) return { tokens: configured, file: null };
  const file = adminTokenFile(config);
  return { tokens: [{ name: 'operator', token: secretFile(file, 'the admin token') }], file };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The admin tokens as the admin listener checks them: SHA-256 digests compared in constant
 * time, the matching token's name recorded as who acted. A config reload replaces them.
 */
export class AdminKeys {
  #keys: readonly { readonly name: string; readonly digest: Buffer }[] = [];

  constructor(tokens: AdminTokens['tokens']) {
    this.replace(tokens);
  }

  replace(tokens: AdminTokens['tokens']): void {
    this.#keys = tokens.map((t) => ({ name: t.name, digest: digest(t.token) }));
  }

  /** The name of the token in `Authorization: Bearer TOKEN` (RFC 6750), or null. */
  who(header: string | undefined): string | null {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) return null;
    const given = digest(m[1] as string);
    let name: string | null = null;
    // Every token is compared, so timing says nothing about which one matched.
    for (const k of this.#keys) if (timingSafeEqual(given, k.digest)) name ??= k.name;
    return name;
  }
}
