import { timingSafeEqual } from 'node:crypto';
import {
  ALGORITHM,
  canonicalHeaders,
  canonicalQuery,
  canonicalUri,
  payloadHash,
  percentDecode,
  queryParams,
  sign,
  uriEncode,
} from './sigv4-canonical.js';
import type { QueryParam, SigningInput } from './sigv4-canonical.js';
import { headerValues as values } from './headers.js';
import { AMZ_DATE, headerSignature, Q, querySignature } from './sigv4-parse.js';
import type { Parsed, Signature } from './sigv4-parse.js';

/**
 * AWS Signature Version 4 with a sentinel pair: the agent signs with the sentinel key id and
 * secret; a request whose signature verifies under them is signed again, for the same time,
 * scope and headers, with the real pair. Pure: the caller forwards what it returns, or refuses.
 */

/** A request as received: `path` is the raw origin-form target; header strings are latin1. */
export interface SigV4Request {
  readonly method: string;
  readonly path: string;
  readonly rawHeaders: readonly string[];
  /** The whole body, or null when it was not read (only a declared payload hash signs it). */
  readonly body: Buffer | null;
}

export interface SigV4Key {
  readonly sentinelKeyId: string;
  readonly sentinelSecret: string;
  readonly accessKeyId: string;
  readonly secret: string;
  readonly regions?: readonly string[];
  readonly services?: readonly string[];
}

/** `resigned` false: the request does not use this sentinel key id, returned as it came. */
export type SigV4Result =
  | {
      readonly ok: true;
      readonly resigned: boolean;
      readonly path: string;
      readonly rawHeaders: string[];
    }
  | { readonly ok: false; readonly reason: string };

/** How far a signature's time may be from now (AWS's own limit for the header form). */
const SKEW_MS = 15 * 60_000;

/**
 * `req` signed again with the real pair when its signature is the sentinel pair's; as it came
 * (`resigned: false`) when it does not carry the sentinel key id; refused with a reason (which
 * never quotes the real pair) when it carries it in any other way.
 */
export function resignSigV4(req: SigV4Request, cred: SigV4Key, now: number): SigV4Result {
  if (!mentions(req, cred.sentinelKeyId))
    return { ok: true, resigned: false, path: req.path, rawHeaders: [...req.rawHeaders] };
  // The sentinel key id is in the request: anything but a signature that verifies is refused.
  const refuse = (reason: string): SigV4Result => ({
    ok: false,
    reason: `sentinel AWS key id ${cred.sentinelKeyId}: ${reason}`,
  });
  if (!/^\/[\x21-\x7e]*$/.test(req.path))
    return refuse('the request target is not an origin-form path of ASCII characters');
  const q = req.path.indexOf('?');
  const path = q < 0 ? req.path : req.path.slice(0, q);
  const query = q < 0 ? '' : req.path.slice(q + 1);
  const params = queryParams(query);
  if (params === null) return refuse('the query has a malformed %-escape');
  const parsed = signatureOf(req.rawHeaders, params);
  if (!parsed.ok) return refuse(parsed.reason);
  const { sig } = parsed;
  if (sig.keyId !== cred.sentinelKeyId)
    return refuse('it appears in the request, but is not the key id that signs it');
  if (cred.regions !== undefined && !cred.regions.includes(sig.region))
    return refuse(`region ${sig.region} is not allowed (${cred.regions.join(', ')})`);
  if (cred.services !== undefined && !cred.services.includes(sig.service))
    return refuse(`service ${sig.service} is not allowed (${cred.services.join(', ')})`);
  if (
    values(req.rawHeaders, 'x-amz-security-token').length > 0 ||
    has(params, 'X-Amz-Security-Token')
  )
    return refuse(
      'a session token does not go with a sentinel key (it stands for a long-term key)',
    );
  const amzDate = sig.form === 'query' ? sig.amzDate : single(req.rawHeaders, 'x-amz-date');
  if (amzDate === undefined || !AMZ_DATE.test(amzDate))
    return refuse(
      'it needs one x-amz-date header, YYYYMMDDTHHMMSSZ (a Date header alone is not supported)',
    );
  const late = lateness(sig, amzDate, now);
  if (late !== null) return refuse(late);
  const signed = sig.signedHeaders.split(';');
  for (const name of sig.form === 'header' ? ['host', 'x-amz-date'] : ['host'])
    if (!signed.includes(name)) return refuse(`${name} is not a signed header`);
  const payload = payloadHash(
    req.rawHeaders,
    req.body,
    sig.form === 'query' && sig.service === 's3',
  );
  if ('reason' in payload) return refuse(payload.reason);
  const headers = canonicalHeaders(req.rawHeaders, signed);
  if ('missing' in headers) return refuse(`signed header ${headers.missing} is not in the request`);
  const scope = `${sig.date}/${sig.region}/${sig.service}/aws4_request`;
  const input = (given: readonly QueryParam[]): SigningInput => ({
    amzDate,
    scope,
    canonicalRequest: [
      req.method,
      canonicalUri(path, sig.service),
      canonicalQuery(given.filter((p) => sig.form === 'header' || p.name !== Q.signature)),
      headers.text,
      sig.signedHeaders,
      payload.hash,
    ].join('\n'),
  });
  const expected = Buffer.from(sign(cred.sentinelSecret, input(params)));
  if (!timingSafeEqual(expected, Buffer.from(sig.signature)))
    return refuse('the signature does not verify with the sentinel secret');
  const real = `${cred.accessKeyId}/${scope}`;
  return sig.form === 'header'
    ? withHeader(req, sig, real, sign(cred.secret, input(params)))
    : withQuery(req, params, real, (given) => sign(cred.secret, input(given)));
}

/** The request with its Authorization header naming the real key id and its signature. */
function withHeader(
  req: SigV4Request,
  sig: Signature,
  credential: string,
  signature: string,
): SigV4Result {
  const authorization = `${ALGORITHM} Credential=${credential}, SignedHeaders=${sig.signedHeaders}, Signature=${signature}`;
  const rawHeaders = req.rawHeaders.map((v, i) =>
    i % 2 === 1 && (req.rawHeaders[i - 1] as string).toLowerCase() === 'authorization'
      ? authorization
      : v,
  );
  return { ok: true, resigned: true, path: req.path, rawHeaders };
}

/**
 * The presigned URL with the real X-Amz-Credential and X-Amz-Signature, every other byte as
 * sent. The query form signs its own X-Amz-Credential: the real one goes in before signing.
 */
function withQuery(
  req: SigV4Request,
  params: readonly QueryParam[],
  credential: string,
  signed: (params: readonly QueryParam[]) => string,
): SigV4Result {
  const real = params.map((p) => (p.name === Q.credential ? { ...p, value: credential } : p));
  const signature = signed(real);
  const q = req.path.indexOf('?');
  const rewritten = req.path
    .slice(q + 1)
    .split('&')
    .map((raw) => {
      const name = params.find((p) => p.raw === raw)?.name;
      return name === Q.credential
        ? `${Q.credential}=${uriEncode(credential, false)}`
        : name === Q.signature
          ? `${Q.signature}=${signature}`
          : raw;
    });
  const path = `${req.path.slice(0, q)}?${rewritten.join('&')}`;
  return { ok: true, resigned: true, path, rawHeaders: [...req.rawHeaders] };
}

/** Whether the key id is anywhere in the target (as sent or decoded) or in a header value. */
function mentions(req: SigV4Request, keyId: string): boolean {
  return (
    req.path.includes(keyId) ||
    (percentDecode(req.path) ?? '').includes(keyId) ||
    req.rawHeaders.some((v, i) => i % 2 === 1 && v.includes(keyId))
  );
}

/** The one signature the request carries: two places (AWS refuses that too) is none. */
function signatureOf(rawHeaders: readonly string[], params: readonly QueryParam[]): Parsed {
  const auth = values(rawHeaders, 'authorization');
  const presigned = [Q.algorithm, Q.credential, Q.signature].some((n) => has(params, n));
  if (presigned && auth.length > 0)
    return { ok: false, reason: 'it is signed both in the Authorization header and in the query' };
  if (presigned) return querySignature(params);
  if (auth.length > 1)
    return { ok: false, reason: 'the request has more than one Authorization header' };
  if (auth.length === 0) return { ok: false, reason: 'the request carries no SigV4 signature' };
  return headerSignature(auth[0] as string);
}

/** Why a signature made at `amzDate` is not good at `now`, or null. */
function lateness(sig: Signature, amzDate: string, now: number): string | null {
  const [, y, mo, d, h, mi, s] = (AMZ_DATE.exec(amzDate) as RegExpExecArray).map(Number);
  const at = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s);
  const iso = new Date(at).toISOString();
  if (iso.replace(/[-:]|\.\d{3}/g, '') !== amzDate) return `${amzDate} is not a valid time`;
  if (!amzDate.startsWith(sig.date))
    return `the credential's date ${sig.date} is not that of ${amzDate}`;
  if (at - now > SKEW_MS) return `it was signed for ${iso}, more than 15 minutes from now`;
  if (sig.expires !== undefined) {
    const end = at + sig.expires * 1000;
    return now > end ? `the presigned URL expired at ${new Date(end).toISOString()}` : null;
  }
  return now - at > SKEW_MS ? `it was signed at ${iso}, more than 15 minutes ago` : null;
}

/** The header's one value; undefined when absent or sent more than once. */
function single(rawHeaders: readonly string[], name: string): string | undefined {
  const found = values(rawHeaders, name);
  return found.length === 1 ? found[0]?.trim() : undefined;
}

const has = (params: readonly QueryParam[], name: string): boolean =>
  params.some((p) => p.name === name);
