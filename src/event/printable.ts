/** Controls, line and paragraph separators, bidi overrides: a target must stay one line. */
const UNPRINTABLE =
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with the characters above replaced by U+FFFD: one line, shown as it reads (an agent's
 * or a server's text in a reason, a chat line or a page).
 */
export const printable = (text: string): string => text.replace(UNPRINTABLE, '\ufffd');
