import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SigV4Key } from '../../src/action/sigv4.js';

/**
 * SigV4 checked the way AWS does, by @smithy/signature-v4 (the AWS SDK's own signer, independent
 * of trajgate's src/action/sigv4.ts): what the S3 stub and the SigV4 unit tests trust.
 */

export interface AwsKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** What an agent holds: a sentinel key id, and a sentinel as its secret. */
export const SENTINEL_PAIR: AwsKey = {
  accessKeyId: 'TGSAKIA0123456789AB',
  secretAccessKey: 'tgs_aws_0123456789abcdef0123456789abcdef',
};
/** The real pair, which only the upstream knows besides trajgate. */
export const REAL_PAIR: AwsKey = {
  accessKeyId: 'AKIAREALKEY012345678',
  secretAccessKey: 'realSecret/Key+0123456789abcdefghijklmn',
};
/** The two as resignSigV4 takes them. */
export const TEST_KEY: SigV4Key = {
  sentinelKeyId: SENTINEL_PAIR.accessKeyId,
  sentinelSecret: SENTINEL_PAIR.secretAccessKey,
  accessKeyId: REAL_PAIR.accessKeyId,
  secret: REAL_PAIR.secretAccessKey,
};

/** A request as it arrived: the raw target, Node's raw header list, the whole body. */
export interface ArrivedRequest {
  readonly method: string;
  readonly path: string;
  readonly rawHeaders: readonly string[];
  readonly body: Buffer;
}

const SIGNATURE =
  /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

const timeOf = (amzDate: string): Date => {
  const [, y, mo, d, h, mi, s] = (AMZ_DATE.exec(amzDate) ?? []).map(Number);
  return new Date(Date.UTC(y ?? NaN, (mo ?? NaN) - 1, d, h, mi, s));
};

/** The decoded query of a raw target, repeated names as lists (how smithy holds them). */
export function queryOf(target: string): Record<string, string | string[]> {
  const q = target.indexOf('?');
  const out: Record<string, string | string[]> = {};
  if (q < 0) return out;
  for (const piece of target
    .slice(q + 1)
    .split('&')
    .filter((p) => p !== '')) {
    const eq = piece.indexOf('=');
    const name = decodeURIComponent(eq < 0 ? piece : piece.slice(0, eq));
    const value = decodeURIComponent(eq < 0 ? '' : piece.slice(eq + 1));
    const had = out[name];
    out[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  return out;
}

/**
 * Whether `req` is signed by `key` (header form or presigned URL), recomputed by smithy from
 * the signed headers as they arrived: null when it verifies, else why not.
 */
export async function sigV4Problem(
  req: ArrivedRequest,
  key: AwsKey,
  service = 's3',
): Promise<string | null> {
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] as string).toLowerCase();
    const value = req.rawHeaders[i + 1] as string;
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const query = queryOf(req.path);
  const presigned = typeof query['X-Amz-Signature'] === 'string';
  const fields = presigned
    ? [
        query['X-Amz-Credential'],
        query['X-Amz-SignedHeaders'],
        query['X-Amz-Signature'],
        query['X-Amz-Date'],
      ].map(String)
    : null;
  const m = presigned
    ? SIGNATURE.exec(
        `AWS4-HMAC-SHA256 Credential=${fields?.[0]}, SignedHeaders=${fields?.[1]}, Signature=${fields?.[2]}`,
      )
    : SIGNATURE.exec(headers.authorization ?? '');
  if (m === null) return 'no SigV4 signature';
  const [, keyId, , region, scopeService, signedList, signature] = m as unknown as string[];
  if (keyId !== key.accessKeyId) return `unknown access key ${keyId}`;
  if (scopeService !== service) return `signed for service ${scopeService}`;
  const signed = (signedList as string).split(';');
  const amzDate = presigned ? (fields?.[3] as string) : (headers['x-amz-date'] ?? '');
  const request = {
    method: req.method,
    protocol: 'https:',
    hostname: headers.host ?? '',
    path: req.path.split('?')[0] as string,
    query,
    headers: Object.fromEntries(signed.map((n) => [n, headers[n] ?? ''])),
    body: req.body.length > 0 ? req.body : undefined,
  };
  const signer = new SignatureV4({
    credentials: key,
    region: region as string,
    service,
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: service !== 's3',
    // Only the headers that arrived are signed (the payload hash is the header, or the body's).
    applyChecksum: false,
  });
  const signingDate = timeOf(amzDate);
  if (presigned) {
    const expiresIn = Number(query['X-Amz-Expires']);
    for (const name of ['Algorithm', 'Credential', 'Date', 'Expires', 'SignedHeaders', 'Signature'])
      delete query[`X-Amz-${name}`];
    // A presigned S3 URL signs no payload (UNSIGNED-PAYLOAD), and no header says so.
    const sha = { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' };
    const none = new Set(['x-amz-content-sha256']);
    const again = await signer.presign(
      { ...request, headers: { ...request.headers, ...sha } },
      {
        signingDate,
        expiresIn,
        signableHeaders: new Set(signed),
        unsignableHeaders: none,
        unhoistableHeaders: none,
      },
    );
    return again.query?.['X-Amz-Signature'] === signature ? null : 'SignatureDoesNotMatch';
  }
  const again = await signer.sign(request, { signingDate, signableHeaders: new Set(signed) });
  const recomputed = SIGNATURE.exec(again.headers.authorization ?? '')?.[6];
  return recomputed === signature ? null : 'SignatureDoesNotMatch';
}
