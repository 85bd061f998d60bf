import { brotliCompressSync, deflateRawSync, deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import { brotliDecompressSync, inflateRawSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { SwapCredential, SwapResult } from '../../src/action/credential-swap.js';
import { swapCredentials } from '../../src/action/credential-swap.js';

const SENTINEL = 'tgs_github_0123456789abcdef';
/** Every kind of byte a spelling must carry: reserved in a URL, escaped in JSON, beyond ASCII. */
const VALUE = 'ghp_R3al+Val/ue=x&y"q\\é!*~';
const github: SwapCredential = {
  name: 'github',
  sentinel: SENTINEL,
  value: VALUE,
  header: 'Authorization',
  scheme: 'Bearer',
};
const other: SwapCredential = {
  name: 'other',
  sentinel: 'tgs_other_fedcba9876543210',
  value: 'other-secret-value-0001',
  header: 'X-Other',
};
const creds = [github];
const MAX = 1 << 20;

const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
const percent = (s: string, upper = false) =>
  [...s].map((c) => `%${upper ? hex(c).toUpperCase() : hex(c)}`).join('');
const jsonU = (s: string, upper = false) =>
  [...s].map((c) => `\\u00${upper ? hex(c).toUpperCase() : hex(c)}`).join('');
/** Bytes before and after the sentinel; 0xfb 0xff give `+/` and `-_`. */
const around = (s: string, align: number) =>
  Buffer.concat([
    Buffer.from([0xfb, 0xff, 0xfe].slice(0, align)),
    Buffer.from(s),
    Buffer.from([0xfb, 0xff, 0]),
  ]);
const withValue = (align: number) => around(VALUE, align);

function swapped(result: SwapResult) {
  if (!result.ok) throw new Error(`expected ok, got: ${result.reason}`);
  return result;
}
const header = (raw: readonly string[], name: string) =>
  raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === name.toLowerCase());
const swapBody = (body: string | Buffer, headers: string[] = [], encoding?: string) =>
  swapCredentials(
    {
      path: '/',
      rawHeaders: ['host', 'api.test', 'authorization', 'none', ...headers],
      body: Buffer.from(body),
      contentEncoding: encoding,
    },
    creds,
    MAX,
  );
const bodyText = (r: SwapResult) => swapped(r).body!.toString();

describe('swapCredentials: the URL', () => {
  const query = (path: string) =>
    new URL(
      swapped(swapCredentials({ path, rawHeaders: ['authorization', 'x'], body: null }, creds, MAX))
        .path,
      'http://h',
    ).searchParams;
  it.each([
    ['as is', SENTINEL],
    ['percent-encoded, lower case', percent(SENTINEL)],
    ['percent-encoded, upper case', percent(SENTINEL, true)],
    ['percent-encoded, one character', SENTINEL.replace('_', '%5F')],
    [
      'percent-encoded, mixed cases',
      SENTINEL.replace('_', '%5f').replace('g', '%67').replace('a', '%61'),
    ],
  ])('%s: the upstream decodes the value', (_, spelled) => {
    expect(query(`/v1?a=1&t=${spelled}&b=2`).get('t')).toBe(VALUE);
  });

  it('in a path segment: percent-encoded, so `/` stays inside the segment', () => {
    const r = swapped(
      swapCredentials(
        { path: `/keys/${SENTINEL}/x`, rawHeaders: ['authorization', 'x'], body: null },
        creds,
        MAX,
      ),
    );
    expect(r.path.split('/')[2]).toBe(
      encodeURIComponent(VALUE).replace(/[!'()*]/g, (c) => `%${hex(c).toUpperCase()}`),
    );
    expect(decodeURIComponent(r.path.split('/')[2]!)).toBe(VALUE);
    expect(r.used).toEqual(['github']);
  });
});

describe('swapCredentials: headers', () => {
  const headers = (...raw: string[]) =>
    swapped(swapCredentials({ path: '/', rawHeaders: raw, body: null }, creds, MAX)).rawHeaders;
  it('Bearer as is', () => {
    expect(header(headers('Authorization', `Bearer ${SENTINEL}`), 'authorization')).toEqual([
      `Bearer ${Buffer.from(VALUE).toString('latin1')}`,
    ]);
  });
  it.each([0, 1, 2])(
    'Basic auth: user:sentinel in base64 at offset %i of the credentials',
    (pad) => {
      const user = 'u'.repeat(pad + 3);
      const [value] = header(
        headers('authorization', `Basic ${Buffer.from(`${user}:${SENTINEL}`).toString('base64')}`),
        'authorization',
      );
      expect(Buffer.from(value!.slice(6), 'base64').toString()).toBe(`${user}:${VALUE}`);
    },
  );
  it('a cookie, percent-encoded', () => {
    const [cookie] = header(
      headers('authorization', 'x', 'cookie', `a=1; t=${percent(SENTINEL)}`),
      'cookie',
    );
    expect(decodeURIComponent(cookie!.split('t=')[1]!)).toBe(VALUE);
  });
});

describe('swapCredentials: bodies', () => {
  it('JSON: as is, and \\u escapes in any mix: the value JSON-escaped', () => {
    const body = `{"a":"${SENTINEL}","b":"${jsonU(SENTINEL)}","c":"${jsonU(SENTINEL, true)}","d":"${SENTINEL.replace('_', '\\u005F')}"}`;
    const parsed = JSON.parse(
      bodyText(swapBody(body, ['content-type', 'application/json; charset=utf-8'])),
    );
    expect(parsed).toEqual({ a: VALUE, b: VALUE, c: VALUE, d: VALUE });
  });
  it('JSON: an escaped backslash before u0074 is text, not an escape', () => {
    // `\\u0074` reads as a backslash and "u0074": no sentinel there, one in "b".
    const body = `{"a":"\\${jsonU(SENTINEL)}","b":"${jsonU(SENTINEL)}"}`;
    const parsed = JSON.parse(bodyText(swapBody(body, ['content-type', 'application/json'])));
    expect(parsed).toEqual({ a: `\\u0074${SENTINEL.slice(1)}`, b: VALUE });
  });
  it('form-urlencoded: as is and percent-encoded, the value percent-encoded', () => {
    const r = swapBody(`a=${SENTINEL}&b=${percent(SENTINEL)}`, [
      'content-type',
      'application/x-www-form-urlencoded',
    ]);
    const form = new URLSearchParams(bodyText(r));
    expect([form.get('a'), form.get('b')]).toEqual([VALUE, VALUE]);
  });
  it('text: as is', () => {
    expect(bodyText(swapBody(`token ${SENTINEL}\n`, ['content-type', 'text/plain']))).toBe(
      `token ${VALUE}\n`,
    );
  });
  it.each([0, 1, 2])(
    'base64 and base64url at alignment %i, padded or not, `/` escaped in JSON',
    (align) => {
      const b64 = around(SENTINEL, align).toString('base64');
      const url = around(SENTINEL, align).toString('base64url');
      const body = JSON.stringify({ b64, url, slashed: 'X' }).replace(
        '"X"',
        `"${b64.replaceAll('/', '\\/')}"`,
      );
      const parsed = JSON.parse(bodyText(swapBody(body, ['content-type', 'application/json'])));
      expect(Buffer.from(parsed.b64, 'base64')).toEqual(withValue(align));
      expect(parsed.b64.endsWith('=') || parsed.b64.length % 4 === 0).toBe(true);
      expect(Buffer.from(parsed.url, 'base64url')).toEqual(withValue(align));
      expect(parsed.url).not.toContain('=');
      expect(Buffer.from(parsed.slashed, 'base64')).toEqual(withValue(align));
    },
  );
  it.each([0, 1, 2])('percent-encoded base64 in a form field at alignment %i', (align) => {
    const field = encodeURIComponent(around(SENTINEL, align).toString('base64'));
    const form = new URLSearchParams(
      bodyText(swapBody(`f=${field}`, ['content-type', 'application/x-www-form-urlencoded'])),
    );
    expect(Buffer.from(form.get('f')!, 'base64')).toEqual(withValue(align));
  });
  it('multipart: a text part as is, a base64 part in 76-wide CRLF lines', () => {
    const long = Buffer.concat([
      Buffer.alloc(50, 0xfb),
      Buffer.from(SENTINEL),
      Buffer.alloc(60, 0xfe),
    ]);
    const lines = long
      .toString('base64')
      .match(/.{1,76}/g)!
      .join('\r\n');
    const body = [
      '--XyZ',
      'Content-Disposition: form-data; name="t"',
      '',
      SENTINEL,
      '--XyZ',
      'Content-Transfer-Encoding: base64',
      '',
      lines,
      '--XyZ--',
      '',
    ].join('\r\n');
    const out = bodyText(swapBody(body, ['content-type', 'multipart/form-data; boundary=XyZ']));
    const parts = out.split('--XyZ');
    expect(parts[1]).toBe(`\r\nContent-Disposition: form-data; name="t"\r\n\r\n${VALUE}\r\n`);
    const b64 = parts[2]!.split('\r\n\r\n')[1]!.trimEnd();
    expect(
      b64
        .split('\r\n')
        .slice(0, -1)
        .every((l) => l.length === 76),
    ).toBe(true);
    const expected = Buffer.concat([
      Buffer.alloc(50, 0xfb),
      Buffer.from(VALUE),
      Buffer.alloc(60, 0xfe),
    ]);
    expect(Buffer.from(b64.replaceAll('\r\n', ''), 'base64')).toEqual(expected);
  });
  it.each([
    ['gzip', gzipSync, gunzipSync],
    ['deflate', deflateSync, inflateSync],
    ['deflate', deflateRawSync, inflateRawSync],
    ['br', brotliCompressSync, brotliDecompressSync],
  ] as const)(
    'Content-Encoding %s: decoded, swapped, encoded again the same way',
    (coding, encode, decode) => {
      const r = swapped(
        swapBody(
          encode(Buffer.from(`{"t":"${SENTINEL}"}`)),
          ['content-type', 'application/json'],
          coding,
        ),
      );
      expect(JSON.parse(decode(r.body!).toString()).t).toBe(VALUE);
    },
  );
  it('Content-Encoding from the headers when not given, two codings undone in order', () => {
    const body = brotliCompressSync(gzipSync(Buffer.from(`x ${SENTINEL}`)));
    const r = swapped(swapBody(body, ['content-encoding', 'gzip, br']));
    expect(gunzipSync(brotliDecompressSync(r.body!)).toString()).toBe(`x ${VALUE}`);
  });
  it('a body without sentinels is forwarded as it came, not encoded again', () => {
    const body = gzipSync(Buffer.from('{"nothing":"here"}'));
    const input = { path: '/', rawHeaders: ['authorization', 'x'], body, contentEncoding: 'gzip' };
    expect(swapped(swapCredentials(input, creds, MAX)).body).toBe(body);
  });
});

describe('swapCredentials: placement', () => {
  const swap = (path: string, rawHeaders: string[], list: readonly SwapCredential[] = creds) =>
    swapped(swapCredentials({ path, rawHeaders, body: null }, list, MAX));
  it('no Authorization: added with its scheme', () => {
    const r = swap('/', ['host', 'h']);
    expect(header(r.rawHeaders, 'authorization')).toEqual([
      `Bearer ${Buffer.from(VALUE).toString('latin1')}`,
    ]);
    expect(r.used).toEqual(['github']);
  });
  it('no scheme: the value alone', () => {
    expect(header(swap('/', [], [other]).rawHeaders, 'x-other')).toEqual([other.value]);
  });
  it("the agent's own token is left alone, and the credential not used", () => {
    const r = swap('/', ['Authorization', 'Bearer its-own-token-000000']);
    expect(header(r.rawHeaders, 'authorization')).toEqual(['Bearer its-own-token-000000']);
    expect(r.used).toEqual([]);
  });
  const query: SwapCredential = {
    name: 'q',
    sentinel: 'tgs_q_00112233445566778899',
    value: 'q/v+a&lue=0123456789',
  };
  it.each([
    ['/x', '/x?access_token=q%2Fv%2Ba%26lue%3D0123456789'],
    ['/x?a=1', '/x?a=1&access_token=q%2Fv%2Ba%26lue%3D0123456789'],
    ['/x?', '/x?access_token=q%2Fv%2Ba%26lue%3D0123456789'],
    ['/x?access_token=mine', '/x?access_token=mine'],
    ['/x?access%5Ftoken=mine', '/x?access%5Ftoken=mine'],
    [`/x?access_token=${query.sentinel}`, '/x?access_token=q%2Fv%2Ba%26lue%3D0123456789'],
  ])('query mode: %s → %s', (path, expected) => {
    expect(swap(path, [], [{ ...query, query: 'access_token' }]).path).toBe(expected);
  });
  it('two credentials for one header: the first placed, the one the agent named swapped', () => {
    const second = { ...other, header: 'Authorization' };
    expect(header(swap('/', [], [github, second]).rawHeaders, 'authorization')).toHaveLength(1);
    const r = swap('/', ['authorization', other.sentinel], [github, second]);
    expect(header(r.rawHeaders, 'authorization')).toEqual([other.value]);
    expect(r.used).toEqual(['other']);
  });
});

describe('swapCredentials: fails closed, never quoting the value', () => {
  const big = Buffer.alloc(MAX + 1, 0x61);
  const cases: [string, () => SwapResult, RegExp][] = [
    [
      'a sentinel broken by a line break',
      () => swapBody(`${SENTINEL.slice(0, 9)}\r\n${SENTINEL.slice(9)}`),
      /github \(spelled wrapped\) in the request body/,
    ],
    [
      'a sentinel in a header name',
      () =>
        swapCredentials({ path: '/', rawHeaders: [`x-${SENTINEL}`, '1'], body: null }, creds, MAX),
      /github .* in a header's name/,
    ],
    [
      'base64 with every character percent-encoded',
      () => swapBody(`f=${percent(around(SENTINEL, 1).toString('base64'))}`),
      /github \(spelled percent\+base64\) in the request body/,
    ],
    [
      'base64 with every character a JSON escape',
      () => swapBody(`"${jsonU(around(SENTINEL, 2).toString('base64'))}"`),
      /github \(spelled json\+base64\) in the request body/,
    ],
    ['a body over the limit', () => swapBody(big), /larger than 1048576 bytes: too large to scan/],
    [
      'a body that decodes past the limit',
      () => swapBody(gzipSync(big), [], 'gzip'),
      /decodes to more than 1048576 bytes: too large to scan/,
    ],
    [
      'an unknown coding',
      () => swapBody('x', [], 'zstd'),
      /Content-Encoding "zstd" cannot be decoded/,
    ],
    ['a corrupt gzip body', () => swapBody('not gzip at all', [], 'gzip'), /is not valid gzip/],
    [
      'a value with CR LF swapped into a header',
      () =>
        swapCredentials(
          { path: '/', rawHeaders: ['x-t', SENTINEL], body: null },
          [{ ...github, value: 'line-one\r\nX-Evil: 1' }],
          MAX,
        ),
      /credential github: its value holds CR, LF or NUL.*the x-t header/,
    ],
    [
      'a value with a NUL placed in a header',
      () =>
        swapCredentials(
          { path: '/', rawHeaders: [], body: null },
          [{ ...github, value: 'nul-inside\0value-000' }],
          MAX,
        ),
      /credential github: its value holds CR, LF or NUL.*Authorization header/,
    ],
  ];
  it.each(cases)('%s', (_, run, reason) => {
    const r = run();
    expect(r.ok).toBe(false);
    const text = r.ok ? '' : r.reason;
    expect(text).toMatch(reason);
    for (const secret of [VALUE, 'line-one', 'nul-inside']) expect(text).not.toContain(secret);
  });
  it('no credentials: the request as it came', () => {
    const r = swapped(
      swapCredentials({ path: `/${SENTINEL}`, rawHeaders: ['a', 'b'], body: null }, [], MAX),
    );
    expect([r.path, r.rawHeaders, r.used]).toEqual([`/${SENTINEL}`, ['a', 'b'], []]);
  });
});
