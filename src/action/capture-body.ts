import type { Transform } from 'node:stream';
import {
  constants,
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createInflateRaw,
} from 'node:zlib';

/** A body as a capture stores it: text when it reads as text, else base64. */
export interface StoredBody {
  readonly body: string;
  readonly encoding: 'text' | 'base64';
  /** Content codings undone (Content-Encoding, in the order applied); absent when none. */
  readonly decoded?: readonly string[];
  /** The decoded body went past `maxBytes` and was cut there. */
  readonly cut: boolean;
}

const TEXTUAL =
  /^\s*(text\/|application\/(json|xml|javascript|ecmascript|x-www-form-urlencoded|x-ndjson|graphql|yaml|x-yaml|toml)\b|[^;]*\+(json|xml)\b)/i;
const CODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

/**
 * How a reviewer reads a captured body: compressed bodies (gzip, deflate, br, as Content-Encoding
 * says) decoded — bounded: decoding stops at `maxBytes` of output, so a bomb costs at most that
 * plus one zlib chunk — and text (a textual Content-Type, or none and printable UTF-8) stored as
 * text; anything else, and a body whose coding does not decode, stays base64 as sent. `partial`:
 * the kept bytes are a prefix, so a last multi-byte character or compressed block may be cut.
 */
export async function storeBody(
  raw: Buffer,
  partial: boolean,
  headers: readonly [string, string][],
  maxBytes: number,
): Promise<StoredBody> {
  const codings = field(headers, 'content-encoding')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let bytes = raw;
  let cut = false;
  if (codings.length > 0 && raw.length > 0) {
    if (!codings.every((c) => CODINGS.has(c))) return base64(raw, false);
    for (const coding of [...codings].reverse()) {
      const out = await decode(coding, bytes, maxBytes);
      if (out === null) return base64(raw, false);
      bytes = out.bytes;
      cut ||= out.cut;
    }
  }
  const decoded = codings.length > 0 && raw.length > 0 ? { decoded: codings } : {};
  const text = asText(bytes, field(headers, 'content-type'), partial || cut);
  return text === null
    ? { ...base64(bytes, cut), ...decoded }
    : { body: text, encoding: 'text', cut, ...decoded };
}

function base64(bytes: Buffer, cut: boolean): StoredBody {
  return { body: bytes.toString('base64'), encoding: 'base64', cut };
}

function field(headers: readonly [string, string][], name: string): string {
  return headers
    .filter(([n]) => n.toLowerCase() === name)
    .map(([, v]) => v)
    .join(', ');
}

function asText(bytes: Buffer, type: string, partial: boolean): string | null {
  if (type !== '' && !TEXTUAL.test(type)) return null;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii')
    return null;
  let text: string;
  try {
    // A prefix may end inside a character: `stream` leaves its first bytes out, not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: partial });
  } catch {
    return null;
  }
  // Untyped bytes are text only when printable: binary that happens to be valid UTF-8 is not.
  if (type === '' && /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return null;
  return text;
}

/**
 * Undoes one coding, keeping at most `max` bytes of output. A cut input (a prefix) decodes as
 * far as it goes (sync flush); data that is not of that coding at all is null.
 */
function decode(
  coding: string,
  input: Buffer,
  max: number,
): Promise<{ bytes: Buffer; cut: boolean } | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const z = inflater(coding, input);
    const finish = (value: { bytes: Buffer; cut: boolean } | null) => {
      if (settled) return;
      settled = true;
      z.destroy();
      resolve(value);
    };
    z.on('data', (chunk: Buffer) => {
      const room = max - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        return finish({ bytes: Buffer.concat(chunks), cut: true });
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    z.once('end', () => finish({ bytes: Buffer.concat(chunks), cut: false }));
    z.once('error', () => finish(size > 0 ? { bytes: Buffer.concat(chunks), cut: true } : null));
    z.end(input);
  });
}

function inflater(coding: string, input: Buffer): Transform {
  const flush = { finishFlush: constants.Z_SYNC_FLUSH };
  if (coding === 'br')
    return createBrotliDecompress({ finishFlush: constants.BROTLI_OPERATION_FLUSH });
  if (coding !== 'deflate') return createGunzip(flush);
  // `deflate` should be zlib-wrapped (RFC 9110 § 8.4.1.2); some senders send it raw.
  return (input[0] ?? 0) % 16 === 8 ? createInflate(flush) : createInflateRaw(flush);
}
