import type { CredentialScrubber } from '../action/credential-scrub.js';
import type { SigV4Result } from '../action/sigv4.js';
import { resignSigV4 } from '../action/sigv4.js';
import { headerValues } from '../action/headers.js';
import type { ArmedCredential } from '../config/credential-values.js';

/** A credential whose value signs requests (AWS SigV4) instead of going into them. */
export type Signing = ArmedCredential & {
  readonly sigv4: NonNullable<ArmedCredential['sigv4']> & { readonly sentinelKeyId: string };
};

export const signs = (c: ArmedCredential): c is Signing => c.sigv4 !== undefined;

/** What a scrub turns back for a signing credential: its real key id, which an error may quote. */
export const keyIdScrub = (
  c: Signing,
): ConstructorParameters<typeof CredentialScrubber>[0][number] => ({
  name: c.name,
  sentinel: c.sigv4.sentinelKeyId,
  value: c.sigv4.accessKeyId,
});

/**
 * The request signed again by each signing credential whose sentinel key id signed it: the
 * agent's signature checked with the sentinel secret, then replaced by one with the real pair.
 * `used`: the credentials that signed it; a signature that does not verify refuses it.
 */
export function resign(
  request: { method: string; path: string; rawHeaders: readonly string[]; body: Buffer | null },
  signing: readonly Signing[],
  now: number,
):
  | { ok: true; path: string; rawHeaders: readonly string[]; used: string[] }
  | { ok: false; reason: string } {
  let { path, rawHeaders } = request;
  const used: string[] = [];
  for (const c of signing) {
    const { sentinelKeyId, accessKeyId, regions, services } = c.sigv4;
    const key = { sentinelKeyId, sentinelSecret: c.sentinel, accessKeyId, secret: c.value };
    const scope = { ...(regions ? { regions } : {}), ...(services ? { services } : {}) };
    const r: SigV4Result = resignSigV4({ ...request, path, rawHeaders }, { ...key, ...scope }, now);
    if (!r.ok) return { ok: false, reason: `credential ${c.name}: ${r.reason}` };
    if (!r.resigned) continue;
    ({ path, rawHeaders } = r);
    used.push(c.name);
  }
  return { ok: true, path, rawHeaders, used };
}

/** Whether a request to a signing credential's host carries its body's hash (S3 always does). */
export const hashDeclared = (rawHeaders: readonly string[]): boolean =>
  headerValues(rawHeaders, 'x-amz-content-sha256').length > 0;
