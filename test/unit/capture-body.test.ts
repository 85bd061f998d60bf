import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { storeBody } from '../../src/action/capture-body.js';

const TEXT = '{"name":"ünïcödé","n":1}';
const as = (type: string, coding?: string): [string, string][] => [
  ['Content-Type', type],
  ...(coding ? [['Content-Encoding', coding] as [string, string]] : []),
];

describe('storeBody: how a capture keeps a body', () => {
  it.each([
    ['gzip', gzipSync(TEXT)],
    ['x-gzip', gzipSync(TEXT)],
    ['deflate', deflateSync(TEXT)],
    ['deflate', deflateRawSync(TEXT)], // raw deflate, as some senders do
    ['br', brotliCompressSync(TEXT)],
  ])('%s is decoded and stored as text', async (coding, bytes) => {
    expect(await storeBody(bytes, false, as('application/json', coding), 1_000)).toEqual({
      body: TEXT,
      encoding: 'text',
      decoded: [coding],
      cut: false,
    });
  });

  it('stacked codings are undone in reverse order', async () => {
    const bytes = brotliCompressSync(gzipSync(TEXT));
    const stored = await storeBody(bytes, false, as('text/plain', 'gzip, br'), 1_000);
    expect(stored).toMatchObject({ body: TEXT, decoded: ['gzip', 'br'] });
  });

  it('a bomb stops at maxBytes of output', async () => {
    const bomb = brotliCompressSync(Buffer.alloc(5_000_000, 'z'));
    const stored = await storeBody(bomb, false, as('text/plain', 'br'), 100);
    expect(stored).toEqual({ body: 'z'.repeat(100), encoding: 'text', decoded: ['br'], cut: true });
  });

  it('a cut compressed prefix decodes as far as it goes', async () => {
    const whole = gzipSync('line of text\n'.repeat(2_000));
    const stored = await storeBody(whole.subarray(0, 60), true, as('text/plain', 'gzip'), 1e6);
    expect(stored.encoding).toBe('text');
    expect(stored.body.length).toBeGreaterThan(0);
    expect('line of text\n'.repeat(2_000).startsWith(stored.body)).toBe(true);
  });

  it('a cut prefix ending inside a character keeps the whole characters before it', async () => {
    const bytes = Buffer.from('naïve');
    const stored = await storeBody(bytes.subarray(0, 3), true, as('text/plain'), 3);
    expect(stored).toMatchObject({ body: 'na', encoding: 'text' });
  });

  it('what is not text, or not UTF-8, stays base64 as sent', async () => {
    const bin = Buffer.from([0, 159, 146, 150]);
    const cases: [Buffer, [string, string][]][] = [
      [bin, as('application/octet-stream')],
      [Buffer.from('plain'), as('image/png')],
      [Buffer.from([0xe9]), as('text/plain; charset=iso-8859-1')],
      [Buffer.from([0xff, 0xfe]), as('text/plain')], // invalid UTF-8
      [Buffer.from('a\u0001b'), []], // untyped, not printable
      [Buffer.from('not gzip'), as('text/plain', 'gzip')], // a coding that does not decode
      [gzipSync('x'), as('text/plain', 'compress')], // a coding trajgate does not read
    ];
    for (const [bytes, headers] of cases) {
      expect(await storeBody(bytes, false, headers, 1_000)).toEqual({
        body: bytes.toString('base64'),
        encoding: 'base64',
        cut: false,
      });
    }
  });

  it('untyped printable UTF-8 is text', async () => {
    expect(await storeBody(Buffer.from('a=1&b=ü\n'), false, [], 100)).toEqual({
      body: 'a=1&b=ü\n',
      encoding: 'text',
      cut: false,
    });
  });
});
