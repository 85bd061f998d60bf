// Text a server or an agent wrote, made inert for the reviewer: what would hide, reorder or
// overwrite what is shown (control and format characters, bidi overrides, Unicode tags, variation
// selectors, lone surrogates) becomes a visible escape, and URLs are marked as text, never
// links. Pure, no DOM: the page renders the pieces as text nodes (tool-change.ts), tests call it.

/** One piece of neutralised text: shown as is, a visible escape, or a URL shown as text. */
export interface Piece {
  readonly kind: 'text' | 'escape' | 'url';
  readonly text: string;
}

/**
 * Characters that do not show as themselves (a line break apart: the caller splits lines):
 * controls (Cc), format characters (Cf: bidi marks and overrides, zero-width characters, tags
 * U+E0000–E007F), line and paragraph separators, lone surrogates, variation selectors and the
 * Hangul fillers that render blank.
 */
const HIDDEN =
  /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u{fe00}-\u{fe0f}\u{e0100}-\u{e01ef}\u{115f}\u{1160}\u{3164}\u{ffa0}]/u;
/** A URL with a scheme, or a bare `www.` host: marked so the reviewer sees where it points. */
const URL_LIKE = /\b(?:[a-z][a-z0-9+.-]*:\/\/|www\.)[^\s<>"'`]+/giu;
const SHORT: Readonly<Record<string, string>> = { '\t': '\\t', '\r': '\\r', '\u0000': '\\0' };

/** `\t`, `\r`, or `U+202E`: how a hidden character is written. */
export function escapeOf(char: string): string {
  const cp = char.codePointAt(0) as number;
  return SHORT[char] ?? `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** `text` (one line: a `\n` is escaped too) as pieces: text, escapes of hidden characters, URLs. */
export function inertPieces(text: string): Piece[] {
  const out: Piece[] = [];
  let plain = '';
  const flush = () => {
    if (plain !== '') out.push(...urlPieces(plain));
    plain = '';
  };
  for (const char of text) {
    if (HIDDEN.test(char)) {
      flush();
      out.push({ kind: 'escape', text: escapeOf(char) });
    } else plain += char;
  }
  flush();
  return out;
}

function urlPieces(text: string): Piece[] {
  const out: Piece[] = [];
  let at = 0;
  for (const m of text.matchAll(URL_LIKE)) {
    if (m.index > at) out.push({ kind: 'text', text: text.slice(at, m.index) });
    out.push({ kind: 'url', text: m[0] });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ kind: 'text', text: text.slice(at) });
  return out;
}

/** One line of inert text as a plain string: escapes written `⟨U+202E⟩` (dialogs, titles). */
export function inertLine(text: string, max: number): string {
  const { shown, more } = cut(text, max);
  const line = inertPieces(shown)
    .map((p) => (p.kind === 'escape' ? `⟨${p.text}⟩` : p.text))
    .join('');
  return more === 0 ? line : `${line}… ${more.toLocaleString('en')} more characters`;
}

/** Code points of `text` (what the page counts and cuts: a surrogate pair is one). */
export const length = (text: string): number => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

/** `text` split after `max` code points: what is shown, the rest, and how many code points that is. */
export function cut(text: string, max: number): { shown: string; rest: string; more: number } {
  let n = 0;
  let at = 0;
  for (const char of text) {
    if (n === max) break;
    n++;
    at += char.length;
  }
  const rest = text.slice(at);
  return { shown: text.slice(0, at), rest, more: rest === '' ? 0 : length(rest) };
}
