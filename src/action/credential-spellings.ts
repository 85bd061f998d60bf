/**
 * How a credential's value (or sentinel) is written where an upstream reads it decoded, and the
 * one byte replacement that both the request swap and the response scrub use.
 */

/** RFC 3986 § 2.3: the bytes a URI never escapes. */
const UNRESERVED = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~') {
  UNRESERVED[c.charCodeAt(0)] = 1;
}

/** RFC 3986 § 2.1: every byte of the UTF-8 value but the unreserved ones as `%XX`. */
export function percentEncode(value: string, lowerHex = false): string {
  let out = '';
  for (const b of Buffer.from(value, 'utf8')) {
    if (UNRESERVED[b] === 1) out += String.fromCharCode(b);
    else {
      const hex = b.toString(16).padStart(2, '0');
      out += `%${lowerHex ? hex : hex.toUpperCase()}`;
    }
  }
  return out;
}

/** RFC 8259 § 7: the value as inside a JSON string, without the quotes. */
export const jsonEscape = (value: string): string => JSON.stringify(value).slice(1, -1);

export interface Replaced {
  /** The input up to `consumed` with each match replaced. */
  readonly out: Buffer;
  readonly consumed: number;
  /** Indexes of the needles that matched, or null for none. */
  readonly hits: ReadonlySet<number> | null;
}

/**
 * Replaces `needles[i]` by `replacements[i]` at every match that starts before `limit`, leftmost
 * first and the longest where two start at once. Input is consumed up to `limit` or the end of
 * the last match, whichever is further: a stream keeps the rest for its next chunk.
 */
export function replaceNeedles(
  input: Buffer,
  needles: readonly Buffer[],
  replacements: readonly Buffer[],
  limit = input.length,
): Replaced {
  const next = needles.map((n) => input.indexOf(n));
  const parts: Buffer[] = [];
  let hits: Set<number> | null = null;
  let at = 0;
  for (;;) {
    let best = -1;
    for (let i = 0; i < needles.length; i++) {
      if (next[i]! >= 0 && next[i]! < at) next[i] = input.indexOf(needles[i]!, at);
      const p = next[i]!;
      if (p < 0) continue;
      const b = best < 0 ? -1 : next[best]!;
      if (best < 0 || p < b || (p === b && needles[i]!.length > needles[best]!.length)) best = i;
    }
    if (best < 0 || next[best]! >= limit) break;
    parts.push(input.subarray(at, next[best]), replacements[best]!);
    at = next[best]! + needles[best]!.length;
    (hits ??= new Set()).add(best);
  }
  const consumed = Math.max(at, limit);
  if (hits === null) return { out: input.subarray(0, consumed), consumed, hits };
  parts.push(input.subarray(at, consumed));
  return { out: Buffer.concat(parts), consumed, hits };
}
