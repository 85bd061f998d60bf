import { createHmac } from 'node:crypto';

/** What the agent holds instead of the value: recognisable, and long enough not to collide. */
export const SENTINEL = /^tgs_[A-Za-z0-9_]{16,}$/;

/** HMAC-SHA256 of a credential's name under the installation's key, for one use (`label`). */
const derive = (key: Buffer, label: string, name: string): Buffer =>
  createHmac('sha256', key).update(`trajgate ${label}\0${name}`).digest();

/**
 * The sentinel an agent holds for a credential with none configured: `tgs_<name>_<32 hex>`,
 * recognisable in any output, 128 bits from HMAC-SHA256 of the name under the installation's
 * key, so the same key and name give the same sentinel after every restart and reload.
 */
export function generatedSentinel(key: Buffer, name: string): string {
  const mac = derive(key, 'sentinel', name).toString('hex');
  // `-` is no sentinel character (credentials-schema.ts SENTINEL).
  return `tgs_${name.replaceAll('-', '_')}_${mac.slice(0, 32)}`;
}

/** RFC 4648 § 6: upper-case letters and digits, as in AWS key ids. */
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/**
 * The AWS access key id an agent signs with for a `sigv4` credential with none configured:
 * `TGS` and 17 base32 characters (85 bits), 20 characters like an AWS key id, derived as the
 * sentinel is (stable), under its own label so neither tells anything of the other.
 */
export function generatedKeyId(key: Buffer, name: string): string {
  const mac = derive(key, 'sigv4 key id', name);
  let id = 'TGS';
  for (let i = 0; i < 17; i++) id += BASE32[(mac[i] as number) & 31];
  return id;
}

/** A credential with its sentinel, and its sentinel key id when it signs (`sigv4`). */
export type WithSentinels<C> = C & {
  readonly sentinel: string;
  readonly sigv4?: { readonly sentinelKeyId: string };
};

/**
 * Each credential's sentinel (and sentinel key id): the configured one, else generated (the key
 * read only then).
 */
export function sentinels<
  C extends {
    readonly name: string;
    readonly sentinel?: string;
    readonly sigv4?: { readonly accessKeyId: string; readonly sentinelKeyId?: string };
  },
>(credentials: readonly C[], key: () => Buffer): WithSentinels<C>[] {
  return credentials.map((c) => {
    const sentinel = c.sentinel ?? generatedSentinel(key(), c.name);
    if (c.sigv4 === undefined) return { ...c, sentinel } as WithSentinels<C>;
    const sentinelKeyId = c.sigv4.sentinelKeyId ?? generatedKeyId(key(), c.name);
    return { ...c, sentinel, sigv4: { ...c.sigv4, sentinelKeyId } } as WithSentinels<C>;
  });
}
