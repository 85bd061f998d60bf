import type { Transform } from 'node:stream';
import * as zlib from 'node:zlib';

/** The content codings trajgate can undo to look inside a body (RFC 9110 § 8.4.1). */
export type Coding = 'gzip' | 'deflate' | 'br';

/**
 * A Content-Encoding field's codings in the order applied; `identity` is none, `x-gzip` is gzip
 * (RFC 9110 § 8.4.1.3). Anything else is `unsupported`, named for the reason.
 */
export function parseCodings(
  field: string | undefined,
): { readonly codings: readonly Coding[] } | { readonly unsupported: string } {
  const codings: Coding[] = [];
  for (const token of (field ?? '').split(',')) {
    const name = token.trim().toLowerCase();
    if (name === '' || name === 'identity') continue;
    if (name === 'gzip' || name === 'x-gzip') codings.push('gzip');
    else if (name === 'deflate' || name === 'br') codings.push(name);
    else return { unsupported: token.trim().slice(0, 40) };
  }
  return { codings };
}

/**
 * RFC 9110 § 8.4.1.2: `deflate` is the zlib format (RFC 1950), whose two header bytes are a
 * multiple of 31 with method 8; some servers send raw deflate (RFC 1951) instead.
 */
export function isZlib(head: Uint8Array): boolean {
  return head.length >= 2 && (head[0]! & 0x0f) === 8 && ((head[0]! << 8) | head[1]!) % 31 === 0;
}

export type Decoded =
  | { readonly ok: true; readonly body: Buffer; readonly encode: (body: Buffer) => Buffer }
  | { readonly ok: false; readonly reason: string };

/**
 * Undoes `codings` (last applied first) within `max` decoded bytes, and answers how to apply
 * them again the same way (raw deflate stays raw).
 */
export function decodeBody(body: Buffer, codings: readonly Coding[], max: number): Decoded {
  const steps: ((b: Buffer) => Buffer)[] = [];
  let decoded = body;
  try {
    for (const coding of [...codings].reverse()) {
      const options = { maxOutputLength: max };
      if (coding === 'gzip') {
        decoded = zlib.gunzipSync(decoded, options);
        steps.push((b) => zlib.gzipSync(b));
      } else if (coding === 'br') {
        decoded = zlib.brotliDecompressSync(decoded, options);
        steps.push((b) => zlib.brotliCompressSync(b));
      } else if (isZlib(decoded)) {
        decoded = zlib.inflateSync(decoded, options);
        steps.push((b) => zlib.deflateSync(b));
      } else {
        decoded = zlib.inflateRawSync(decoded, options);
        steps.push((b) => zlib.deflateRawSync(b));
      }
    }
  } catch (err) {
    const code = (err as { code?: string }).code;
    return code === 'ERR_BUFFER_TOO_LARGE'
      ? { ok: false, reason: `decodes to more than ${max} bytes: too large to scan` }
      : { ok: false, reason: `is not valid ${codings.join(', ')} (${code ?? 'corrupt'})` };
  }
  return { ok: true, body: decoded, encode: (b) => steps.reduceRight((acc, step) => step(acc), b) };
}

/**
 * A streaming decoder for one coding; `head` is the body's first bytes (deflate's format), and
 * without them deflate is the zlib format RFC 9110 § 8.4.1.2 names.
 */
export function decoder(coding: Coding, head?: Uint8Array): Transform {
  if (coding === 'gzip') return zlib.createGunzip();
  if (coding === 'br') return zlib.createBrotliDecompress();
  return head === undefined || isZlib(head) ? zlib.createInflate() : zlib.createInflateRaw();
}
