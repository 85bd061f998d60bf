/**
 * What a terminal would act on rather than show: C0 controls (ESC starts every escape
 * sequence), DEL, C1 controls (U+0080–U+009F: a terminal may read U+009B as CSI, U+009D as
 * OSC), and the bidi and line-separator format characters that reorder or break a line.
 * Agents choose targets, tool names and session texts, so all of it is made visible as `?`.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_BUT_NEWLINE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** What JSON.stringify leaves raw of the above (it escapes C0 itself). */
const RAW_IN_JSON = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** One line of text for a terminal: every unsafe character, newlines too, becomes `?`. */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, '?');
}

/** Text of several lines (a message, a usage): as terminalText, newlines kept. */
export function terminalLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, '?');
}

/** JSON for a terminal: the same value, the characters above written as `\uXXXX`. */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value).replace(
    RAW_IN_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A plain text table: columns padded to their widest cell; unsafe characters made visible. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [head, ...rows].map((row) => row.map(terminalText));
  const widths = head.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
    )
    .join('\n');
}
