/**
 * Swaps inside base64 (RFC 4648 § 4) and base64url (§ 5) runs of a latin1 text: a sentinel at
 * any byte alignment in the decoded bytes (`Basic base64(user:tgs_…)`, git over HTTPS, a base64
 * field in JSON). A run is decoded, swapped inside, and encoded again as it was spelled: same
 * alphabet, padding or none, `+/=` percent-encoded (a form field) or `/` as `\/` (JSON), lines
 * of the same width and end (RFC 2045 § 6.8).
 */

/** One base64 character however escaped, in each alphabet. */
const STANDARD = String.raw`(?:[A-Za-z0-9+/]|%2[BbFf]|\\/)`;
const URL_SAFE = '[A-Za-z0-9_-]';
const PAD = '(?:=|%3[Dd])';
const run = (char: string) => new RegExp(`${char}+(?:\\r?\\n${char}+)*${PAD}{0,2}`, 'g');
const RUNS = [
  { re: run(STANDARD), encoding: 'base64' },
  { re: run(URL_SAFE), encoding: 'base64url' },
] as const;
/** One spelled character of a run: an escape, a line end, or itself. */
const TOKEN = /%2[BbFf]|%3[Dd]|\\\/|\r?\n|[^]/g;
const UNESCAPE: Readonly<Record<string, string>> = {
  '%2b': '+',
  '%2f': '/',
  '\\/': '/',
  '%3d': '=',
};

/** Swaps in decoded bytes; answers null where nothing changed. */
export type Inner = (decoded: Buffer) => Buffer | null;

/** `text` with every run whose decoding `inner` changed encoded again; `minLength` skips short runs. */
export function swapBase64(text: string, minLength: number, inner: Inner): string {
  let out = text;
  for (const { re, encoding } of RUNS) {
    out = out.replace(re, (spelled) =>
      spelled.length < minLength ? spelled : (swapRun(spelled, encoding, inner) ?? spelled),
    );
  }
  return out;
}

interface Style {
  readonly escaped: boolean;
  readonly jsonSlash: boolean;
  readonly escapedPad: boolean;
  readonly width: number;
  readonly eol: string;
}

function swapRun(spelled: string, encoding: 'base64' | 'base64url', inner: Inner): string | null {
  let plain = '';
  const style = { escaped: false, literal: false, jsonSlash: false, escapedPad: false };
  let eol = '';
  let width = 0;
  let line = 0;
  for (const [token] of spelled.matchAll(TOKEN)) {
    if (token.endsWith('\n')) {
      eol ||= token;
      line = 0;
      continue;
    }
    const lower = token.toLowerCase();
    const char = UNESCAPE[lower] ?? token;
    if (lower === '%3d') style.escapedPad = true;
    else if (token === '\\/') style.jsonSlash = true;
    else if (token.length === 3) style.escaped = true;
    else if (token === '+' || token === '/') style.literal = true;
    plain += char;
    width = Math.max(width, ++line);
  }
  const swapped = swapPlain(plain, encoding, inner);
  if (swapped === null) return null;
  // A literal `+` next to `%2B` is a form's space: the run was never base64 as a whole.
  const escaped = style.escaped && !style.literal;
  return respell(swapped, { ...style, escaped, width: eol === '' ? 0 : width, eol });
}

/** Tries the 4 character offsets a blob can start at inside the run; the first that changes wins. */
function swapPlain(plain: string, encoding: 'base64' | 'base64url', inner: Inner): string | null {
  const text = plain.replace(/=+$/, '');
  const padded = text.length < plain.length;
  for (let shift = 0; shift < 4 && text.length - shift >= 4; shift++) {
    const rest = text.length - shift;
    // 4n+1 characters end in one that holds no whole byte: it stays as is.
    const end = text.length - (rest % 4 === 1 ? 1 : 0);
    const part = text.slice(shift, end);
    const decoded = Buffer.from(part, encoding);
    // Bits the decoder drops (non-canonical ends) would be lost: not base64 at this offset.
    if (unpadded(decoded.toString(encoding)) !== part) continue;
    const changed = inner(decoded);
    if (changed === null) continue;
    let encoded = unpadded(changed.toString(encoding));
    if (padded && end === text.length) encoded += '='.repeat((4 - (encoded.length % 4)) % 4);
    return text.slice(0, shift) + encoded + text.slice(end);
  }
  return null;
}

const unpadded = (b64: string) => b64.replace(/=+$/, '');

function respell(plain: string, style: Style): string {
  let out = plain;
  if (style.escaped) out = out.replaceAll('+', '%2B').replaceAll('/', '%2F');
  else if (style.jsonSlash) out = out.replaceAll('/', '\\/');
  if (style.escapedPad) out = out.replaceAll('=', '%3D');
  if (style.width === 0) return out;
  const lines: string[] = [];
  // Width counts characters as decoded: cut the plain text, then spell each line.
  for (let i = 0; i < plain.length; i += style.width) {
    lines.push(respell(plain.slice(i, i + style.width), { ...style, width: 0 }));
  }
  return lines.join(style.eol);
}
