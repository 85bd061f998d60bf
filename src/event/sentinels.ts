import { createHmac } from 'node:crypto';

/**
 * The sentinel an agent holds for a credential with none configured: `tgs_<name>_<32 hex>`,
 * recognisable in any output, 128 bits from HMAC-SHA256 of the name under the installation's
 * key, so the same key and name give the same sentinel after every restart and reload.
 */
export function generatedSentinel(key: Buffer, name: string): string {
  const mac = createHmac('sha256', key).update(`trajgate sentinel\0${name}`).digest('hex');
  // `-` is no sentinel character (credentials-schema.ts SENTINEL).
  return `tgs_${name.replaceAll('-', '_')}_${mac.slice(0, 32)}`;
}

/** Each credential's sentinel: the configured one, else generated (the key read only then). */
export function sentinels<C extends { readonly name: string; readonly sentinel?: string }>(
  credentials: readonly C[],
  key: () => Buffer,
): (C & { readonly sentinel: string })[] {
  return credentials.map((c) => ({
    ...c,
    sentinel: c.sentinel ?? generatedSentinel(key(), c.name),
  }));
}
