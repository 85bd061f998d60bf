import { z } from 'zod';
import { MIN_SECRET } from './problems.js';

/**
 * A credential's `sigv4` key: its value is an AWS secret access key that signs requests
 * (Signature Version 4) instead of going into them. The agent signs with the sentinel as its
 * secret and `sentinelKeyId` as its key id; trajgate checks that signature and signs again with
 * `accessKeyId` and the value. The real key id is never quoted back in any message.
 */

/**
 * Printable ASCII without `/`, `,` or space (they delimit `Credential=ID/DATE/…`); AWS ids are
 * 16 to 128 characters, S3-compatible stores (MinIO) allow shorter ones. At least MIN_SECRET
 * so Problems.hide keeps it out of messages.
 */
const KEY_ID = new RegExp(`^[\\x21-\\x2b\\x2d\\x2e\\x30-\\x7e]{${MIN_SECRET},128}$`);
/** What a configured sentinel key id looks like: an AWS key id's alphabet and lengths. */
export const SENTINEL_KEY_ID = /^[A-Z0-9]{16,128}$/;
/** AWS region and service names (the scope's second and third parts). */
export const SCOPE_PART = /^[a-z0-9-]{1,64}$/;

/** Its text is never described: a key id that does not fit says so without quoting it. */
const keyId = z.unknown().transform((v, ctx): string => {
  if (typeof v !== 'string')
    ctx.addIssue({ code: 'custom', message: 'expected a string (quote it in YAML)' });
  else if (!KEY_ID.test(v))
    ctx.addIssue({
      code: 'custom',
      message: `expected ${MIN_SECRET} to 128 printable ASCII characters without /, comma or space`,
    });
  return typeof v === 'string' ? v : '';
});

const scopeList = (what: string, example: string) =>
  z
    .array(z.string().regex(SCOPE_PART, `expected a ${what} name like ${example}`))
    .min(1, `list at least one ${what}, or leave the key out for any`);

export const sigv4Schema = z
  .strictObject({
    accessKeyId: keyId,
    // Default: generated from the name (event/sentinels.ts generatedKeyId).
    sentinelKeyId: z
      .string()
      .regex(SENTINEL_KEY_ID, 'expected 16 to 128 upper-case letters or digits')
      .optional(),
    regions: scopeList('region', 'us-east-1').optional(),
    services: scopeList('service', 's3').optional(),
  })
  .superRefine((s, ctx) => {
    const { sentinelKeyId: fixed, accessKeyId: real } = s;
    if (fixed !== undefined && real !== '' && (fixed.includes(real) || real.includes(fixed)))
      ctx.addIssue({
        code: 'custom',
        path: ['sentinelKeyId'],
        message: 'must not contain accessKeyId, nor be part of it',
      });
  });

export type RawSigV4 = z.output<typeof sigv4Schema>;

/** The keys that say where a plain value goes: meaningless for a signing key. */
export const PLACES = ['header', 'scheme', 'query'] as const;

/** Two credentials with the same sentinel key id: a signed request could not say whose. */
export function sentinelKeyIdClash(
  list: readonly { readonly sigv4?: RawSigV4 }[],
  i: number,
): number | null {
  const id = list[i]?.sigv4?.sentinelKeyId;
  if (id === undefined) return null;
  const j = list.findIndex((d) => d.sigv4?.sentinelKeyId === id);
  return j < i ? j : null;
}
