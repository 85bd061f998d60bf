import { describe, expect, it } from 'vitest';
import { table, terminalJson, terminalLines, terminalText } from '../../src/cli/table.js';

/**
 * Operator CLI output quotes agents' targets and session texts: nothing in them reaches the
 * terminal as a control (C0, ESC sequences, DEL, C1, bidi overrides); each shows as `?`.
 */
// [name, text, shown]
const cases: [string, string, string][] = [
  ['CSI as ESC [', '/ws/\u001b[2J\u001b[31mred', '/ws/?[2J?[31mred'],
  ['CSI as C1 U+009B', '/ws/\u009b2J\u009b31mred', '/ws/?2J?31mred'],
  ['OSC as C1 U+009D (title, hyperlink)', 'x\u009d0;owned\u009c', 'x?0;owned?'],
  ['NEL U+0085 (a line break to some terminals)', 'a\u0085ALLOW', 'a?ALLOW'],
  ['first and last C1', '\u0080\u009f', '??'],
  ['DEL and BEL', 'a\u007fb\u0007', 'a?b?'],
  ['CR, LF and TAB', 'a\rb\nc\td', 'a?b?c?d'],
  ['bidi override (reorders the rest)', '/ws/\u202egpj.exe', '/ws/?gpj.exe'],
  ['line separator U+2028', 'a\u2028b', 'a?b'],
  ['printable Latin-1 and beyond stay', 'é ü ß 日本 \u00a0', 'é ü ß 日本 \u00a0'],
];

describe('terminal output', () => {
  it.each(cases)('%s in a table cell', (_, text, shown) => {
    const out = table(['KIND', 'TARGET', 'REASON'], [['write', text, 'x']]);
    expect(out.split('\n')[1]).toBe(`write  ${shown.padEnd(Math.max(6, shown.length))}  x`);
    expect(terminalText(text)).toBe(shown);
  });

  it('a table stays one line per row, padded to the cleaned width', () => {
    const out = table(
      ['A', 'B'],
      [
        ['\u009b\u009b', 'y'],
        ['long cell', 'z'],
      ],
    );
    expect(out.split('\n')).toEqual(['A          B', '??         y', 'long cell  z']);
  });

  it('messages keep their own newlines, nothing else', () => {
    expect(terminalLines('trajgate: no\nReason: \u009b31m\r')).toBe('trajgate: no\nReason: ?31m?');
  });

  it('JSON keeps every value, with C1, DEL and bidi written as \\u escapes', () => {
    const value = { target: '/ws/\u009b2J\u007f\u202e\u2028', reason: 'é\u001b' };
    const text = terminalJson(value);
    expect(text).toBe('{"target":"/ws/\\u009b2J\\u007f\\u202e\\u2028","reason":"é\\u001b"}');
    expect(JSON.parse(text)).toEqual(value);
    expect(terminalText(text)).toBe(text);
  });
});
