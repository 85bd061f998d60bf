import { createHash, createHmac } from 'node:crypto';
import { headerValues } from './headers.js';

/**
 * The pieces of an AWS Signature Version 4 canonical request and its signature, as AWS builds
 * them (docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html). Strings here
 * hold one byte per character (latin1, as Node gives header values), so they hash as sent.
 */

export const ALGORITHM = 'AWS4-HMAC-SHA256';

/** RFC 3986 § 2.3 unreserved characters: the only ones SigV4 leaves unencoded. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Each byte not unreserved (nor `/` where kept) as `%XX`, upper-case hex (RFC 3986 § 2.1). */
export function uriEncode(bytes: string, keepSlash: boolean): string {
  let out = '';
  for (const c of bytes)
    out +=
      UNRESERVED.test(c) || (keepSlash && c === '/')
        ? c
        : `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** `%XX` escapes decoded to bytes (`+` stays `+`: RFC 3986, not forms); null when malformed. */
export function percentDecode(text: string): string | null {
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return null;
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
    String.fromCharCode(parseInt(hex, 16)),
  );
}

/**
 * The canonical URI. S3 signs the path as sent (`a//b` and `%2F` are distinct keys); other
 * services remove dot segments and empty ones (RFC 3986 § 5.2.4) and encode the path again.
 */
export function canonicalUri(path: string, service: string): string {
  if (service === 's3') return path === '' ? '/' : path;
  const segments: string[] = [];
  for (const s of path.split('/'))
    if (s === '..') segments.pop();
    else if (s !== '' && s !== '.') segments.push(s);
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  return uriEncode(`/${segments.join('/')}${trailing}`, true);
}

/** One `name=value` of a query as sent, and the bytes it stands for. */
export interface QueryParam {
  readonly raw: string;
  readonly name: string;
  readonly value: string;
}

/** The query's parameters in order (empty ones dropped); null when an escape is malformed. */
export function queryParams(query: string): QueryParam[] | null {
  const params: QueryParam[] = [];
  for (const raw of query.split('&')) {
    if (raw === '') continue;
    const eq = raw.indexOf('=');
    const name = percentDecode(eq < 0 ? raw : raw.slice(0, eq));
    const value = percentDecode(eq < 0 ? '' : raw.slice(eq + 1));
    if (name === null || value === null) return null;
    params.push({ raw, name, value });
  }
  return params;
}

/** Every parameter encoded alike, sorted by name then value (code point order). */
export function canonicalQuery(params: readonly QueryParam[]): string {
  return params
    .map((p) => [uriEncode(p.name, false), uriEncode(p.value, false)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/**
 * `name:value\n` for each signed header: its values in order joined by `,`, each trimmed with
 * runs of white space made one space. An HTTP/2 request's host is its `:authority`. Returns the
 * first signed header the request lacks instead, if any.
 */
export function canonicalHeaders(
  rawHeaders: readonly string[],
  signed: readonly string[],
): { readonly text: string } | { readonly missing: string } {
  const values = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const value = (rawHeaders[i + 1] as string).trim().replace(/\s+/g, ' ');
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  let text = '';
  for (const name of signed) {
    const found = values.get(name) ?? (name === 'host' ? values.get(':authority') : undefined);
    if (found === undefined) return { missing: name };
    text += `${name}:${found.join(',')}\n`;
  }
  return { text };
}

/** Payload hashes that stand for a body not signed (S3: sigv4-streaming-trailers.html). */
const UNSIGNED = new Set(['UNSIGNED-PAYLOAD', 'STREAMING-UNSIGNED-PAYLOAD-TRAILER']);
const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The payload hash the signature covers: `x-amz-content-sha256` as sent when present, checked
 * against the body when that was read; else the body's own (a presigned S3 URL signs none).
 */
export function payloadHash(
  rawHeaders: readonly string[],
  body: Buffer | null,
  presignedS3: boolean,
): { readonly hash: string } | { readonly reason: string } {
  const declared = headerValues(rawHeaders, 'x-amz-content-sha256');
  if (declared.length > 1) return { reason: 'x-amz-content-sha256 is sent more than once' };
  const hash = declared[0]?.trim();
  if (hash === undefined) {
    if (presignedS3) return { hash: 'UNSIGNED-PAYLOAD' };
    if (body === null) return { reason: 'the body was not read, so its hash cannot be checked' };
    return { hash: sha256Hex(body) };
  }
  if (UNSIGNED.has(hash)) return { hash };
  if (hash.startsWith('STREAMING-'))
    return {
      reason: `${hash}: chunk signatures are not supported yet (sign the body's SHA-256 or UNSIGNED-PAYLOAD)`,
    };
  if (!HEX64.test(hash))
    return { reason: 'x-amz-content-sha256 is not a SHA-256 in lower-case hex' };
  if (body !== null && sha256Hex(body) !== hash)
    return { reason: 'x-amz-content-sha256 does not match the body' };
  return { hash };
}

const sha256Hex = (data: string | Buffer): string =>
  createHash('sha256')
    .update(typeof data === 'string' ? Buffer.from(data, 'latin1') : data)
    .digest('hex');

/** What a signature is over: the request's time, its scope and the canonical request. */
export interface SigningInput {
  /** `YYYYMMDDTHHMMSSZ`. */
  readonly amzDate: string;
  /** `DATE/REGION/SERVICE/aws4_request`. */
  readonly scope: string;
  readonly canonicalRequest: string;
}

/** The hex signature of `input` under `secret`: HMAC chained over the scope's parts. */
export function sign(secret: string, input: SigningInput): string {
  const hmac = (key: string | Buffer, data: string) =>
    createHmac('sha256', key).update(data, 'utf8').digest();
  const key = input.scope.split('/').reduce<Buffer | string>(hmac, `AWS4${secret}`);
  const toSign = `${ALGORITHM}\n${input.amzDate}\n${input.scope}\n${sha256Hex(input.canonicalRequest)}`;
  return createHmac('sha256', key).update(toSign, 'latin1').digest('hex');
}
