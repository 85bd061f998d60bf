import { SCOPE_PART } from '../config/sigv4-schema.js';
import { ALGORITHM } from './sigv4-canonical.js';
import type { QueryParam } from './sigv4-canonical.js';

/**
 * A SigV4 signature as a request carries it: in its Authorization header, or in its query (a
 * presigned URL). AWS's names and formats: docs.aws.amazon.com/AmazonS3/latest/API/
 * sigv4-auth-using-authorization-header.html and sigv4-query-string-auth.html.
 */
export interface Signature {
  readonly form: 'header' | 'query';
  readonly keyId: string;
  /** `YYYYMMDD`, `REGION`, `SERVICE` of `KEYID/YYYYMMDD/REGION/SERVICE/aws4_request`. */
  readonly date: string;
  readonly region: string;
  readonly service: string;
  /** As written: `host;x-amz-date`. */
  readonly signedHeaders: string;
  readonly signature: string;
  /** The query form's time (`X-Amz-Date`) and lifetime (`X-Amz-Expires`, seconds). */
  readonly amzDate?: string;
  readonly expires?: number;
}

/** The query parameters of a presigned URL (AWS spells them so; the names are case-sensitive). */
export const Q = {
  algorithm: 'X-Amz-Algorithm',
  credential: 'X-Amz-Credential',
  date: 'X-Amz-Date',
  expires: 'X-Amz-Expires',
  signedHeaders: 'X-Amz-SignedHeaders',
  signature: 'X-Amz-Signature',
} as const;

/** SigV4 presigned URLs live at most 7 days. */
const MAX_EXPIRES = 604_800;
export const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const HEX64 = /^[0-9a-f]{64}$/;
/** Lower-case header names (RFC 9110 § 5.1 tokens), sorted, `;`-separated: as AWS requires. */
const SIGNED_HEADERS = /^[!#$%&'*+.^_`|~0-9a-z-]+(;[!#$%&'*+.^_`|~0-9a-z-]+)*$/;

export type Parsed =
  { readonly ok: true; readonly sig: Signature } | { readonly ok: false; readonly reason: string };
const fail = (reason: string): Parsed => ({ ok: false, reason });

/** `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`. */
export function headerSignature(authorization: string): Parsed {
  const m = /^(\S+)\s+(.*)$/s.exec(authorization.trim());
  if (m === null || m[1] !== ALGORITHM)
    return fail(
      `the Authorization header is not ${ALGORITHM} (SigV4a and SigV2 are not supported)`,
    );
  const fields = new Map<string, string>();
  for (const part of (m[2] as string).split(',')) {
    const eq = part.indexOf('=');
    const name = part.slice(0, eq).trim();
    if (eq < 0 || fields.has(name))
      return fail('the Authorization header has a malformed or repeated field');
    fields.set(name, part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (
    fields.size !== 3 ||
    credential === undefined ||
    signedHeaders === undefined ||
    signature === undefined
  )
    return fail('the Authorization header needs exactly Credential, SignedHeaders and Signature');
  return checked({ form: 'header', credential, signedHeaders, signature });
}

/** The `X-Amz-*` parameters of a presigned URL, each exactly once. */
export function querySignature(params: readonly QueryParam[]): Parsed {
  const got = new Map<string, string>();
  for (const p of params)
    if ((Object.values(Q) as string[]).includes(p.name)) {
      if (got.has(p.name)) return fail(`the query has ${p.name} more than once`);
      got.set(p.name, p.value);
    }
  const missing = Object.values(Q).filter((name) => !got.has(name));
  if (missing.length > 0) return fail(`the presigned URL lacks ${missing.join(', ')}`);
  if (got.get(Q.algorithm) !== ALGORITHM)
    return fail(`${Q.algorithm} is not ${ALGORITHM} (SigV4a is not supported)`);
  const amzDate = got.get(Q.date) as string;
  if (!AMZ_DATE.test(amzDate)) return fail(`${Q.date} is not YYYYMMDDTHHMMSSZ`);
  const expires = got.get(Q.expires) as string;
  if (!/^\d{1,6}$/.test(expires) || Number(expires) < 1 || Number(expires) > MAX_EXPIRES)
    return fail(`${Q.expires} is not a number of seconds from 1 to ${MAX_EXPIRES}`);
  return checked({
    form: 'query',
    credential: got.get(Q.credential) as string,
    signedHeaders: got.get(Q.signedHeaders) as string,
    signature: got.get(Q.signature) as string,
    amzDate,
    expires: Number(expires),
  });
}

/** The credential's five parts, the signed header list and the signature well-formed. */
function checked(
  fields: Omit<Signature, 'keyId' | 'date' | 'region' | 'service'> & { credential: string },
): Parsed {
  const { credential, ...rest } = fields;
  const parts = credential.split('/');
  if (
    parts.length !== 5 ||
    parts[4] !== 'aws4_request' ||
    !/^\d{8}$/.test(parts[1] as string) ||
    !parts.slice(2, 4).every((p) => SCOPE_PART.test(p))
  )
    return fail('the credential is not KEYID/YYYYMMDD/REGION/SERVICE/aws4_request');
  if (!SIGNED_HEADERS.test(rest.signedHeaders))
    return fail('SignedHeaders is not a ;-separated list of lower-case header names');
  const names = rest.signedHeaders.split(';');
  if (names.some((n, i) => i > 0 && (names[i - 1] as string) >= n))
    return fail('SignedHeaders is not sorted, or names a header twice');
  if (!HEX64.test(rest.signature)) return fail('the signature is not 64 lower-case hex digits');
  const [keyId, date, region, service] = parts as [string, string, string, string];
  return { ok: true, sig: { ...rest, keyId, date, region, service } };
}
