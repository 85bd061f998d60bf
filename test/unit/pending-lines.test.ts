import { describe, expect, it } from 'vitest';
import { digestOf } from '../../src/journal/chain.js';
import { PendingLines } from '../../src/journal/pending-lines.js';

const text = (lines: PendingLines) => lines.buffer.toString('utf8', 0, lines.bytes);

describe('PendingLines', () => {
  it('encodes lines with their newline, and gives each one its UTF-8 length and digest', () => {
    const lines = new PendingLines();
    const samples = ['{"a":1}', '{"t":"é→😀 Ω"}', '{"t":"\\u0000 \\n"}', '{"t":"\u2028"}'];
    for (const line of samples) {
      expect(lines.add(line)).toBe(Buffer.byteLength(line));
      expect(lines.lastDigest()).toBe(digestOf(line));
    }
    expect(text(lines)).toBe(samples.map((l) => l + '\n').join(''));
  });

  it('grows for a burst or a line larger than its buffer, keeping what it holds', () => {
    const lines = new PendingLines();
    const small = '{"n":0}';
    lines.add(small);
    const big = `{"t":"${'😀'.repeat(40_000)}"}`; // 160 kB of UTF-8, past the 64 KiB buffer
    expect(lines.add(big)).toBe(Buffer.byteLength(big));
    expect(lines.lastDigest()).toBe(digestOf(big));
    expect(text(lines)).toBe(`${small}\n${big}\n`);
  });

  it('starts over after clear, back at its base size', () => {
    const lines = new PendingLines();
    lines.add(`{"t":"${'x'.repeat(100_000)}"}`);
    lines.clear();
    expect(lines.bytes).toBe(0);
    expect(lines.buffer.length).toBe(64 * 1024);
    lines.add('{"b":2}');
    expect(text(lines)).toBe('{"b":2}\n');
  });
});
