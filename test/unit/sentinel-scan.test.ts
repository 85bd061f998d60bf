import { describe, expect, it } from 'vitest';
import { SentinelScanner, type SentinelFinding } from '../../src/event/sentinel-scan.js';
import { TrajgateError } from '../../src/errors.js';

const GITHUB = 'tgs_github_0123456789abcdef';
const AWS = 'tgs_aws_9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const scanner = new SentinelScanner([
  { name: 'github', sentinel: GITHUB },
  { name: 'aws', sentinel: AWS },
]);

const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
const percent = (s: string, upper = false) =>
  [...s].map((c) => `%${upper ? hex(c).toUpperCase() : hex(c)}`).join('');
const jsonU = (s: string, upper = false) =>
  [...s].map((c) => `\\u00${upper ? hex(c).toUpperCase() : hex(c)}`).join('');
/** The sentinel inside a larger blob, `align` bytes in; 0xfb 0xff encode to `+/` and `-_`. */
const blob = (s: string, align: number, encoding: 'base64' | 'base64url') =>
  Buffer.concat([
    Buffer.from([0xfb, 0xff, 0xfe].slice(0, align)),
    Buffer.from(s),
    Buffer.from([0xfb, 0xff, 0x00]),
  ]).toString(encoding);

const github = (spelling: SentinelFinding['spelling']) => ({ name: 'github', spelling });

/** Each spelling of GITHUB in a body, and what the scan must find. */
const cases: [string, string, SentinelFinding[]][] = [
  ['as is, in a header line', `Authorization: Bearer ${GITHUB}\r\n`, [github('raw')]],
  ['percent-encoded, every byte, lower case', `?t=${percent(GITHUB)}&x=1`, [github('percent')]],
  ['percent-encoded, every byte, upper case', `?t=${percent(GITHUB, true)}`, [github('percent')]],
  ['percent-encoded, one byte', `?t=${GITHUB.replace('_', '%5F')}`, [github('percent')]],
  ['percent-encoded after a stray %', `%%zz%${percent(GITHUB)}`, [github('percent')]],
  ['JSON-escaped, every character', `{"t":"${jsonU(GITHUB)}"}`, [github('json')]],
  ['JSON-escaped, upper-case hex', `{"t":"${jsonU(GITHUB, true)}"}`, [github('json')]],
  ['JSON-escaped, one character', `{"t":"${GITHUB.replace('_', '\\u005f')}"}`, [github('json')]],
  ...[0, 1, 2].flatMap((align): [string, string, SentinelFinding[]][] => [
    [
      `base64 at alignment ${align}`,
      `{"b":"${blob(GITHUB, align, 'base64')}"}`,
      [github('base64')],
    ],
    [
      `base64url at alignment ${align}`,
      `d=${blob(GITHUB, align, 'base64url')}`,
      [github('base64')],
    ],
    [
      `base64 with \\/ at alignment ${align}`,
      `{"b":"${blob(GITHUB, align, 'base64').replaceAll('/', '\\/')}"}`,
      [github('base64')],
    ],
    [
      `percent-encoded base64 at alignment ${align}`,
      percent(blob(GITHUB, align, 'base64')),
      [github('percent+base64')],
    ],
    [
      `JSON-escaped base64url at alignment ${align}`,
      `"${jsonU(blob(GITHUB, align, 'base64url'))}"`,
      [github('json+base64')],
    ],
  ]),
  ...[4, 76].flatMap((width): [string, string, SentinelFinding[]][] => {
    // 50 bytes before the sentinel: it starts at character 68, so a 76 wide line breaks in it.
    const long = Buffer.concat([Buffer.alloc(50, 0xfb), Buffer.from(GITHUB)]).toString('base64');
    const lines = (eol: string) => long.match(new RegExp(`.{1,${width}}`, 'g'))!.join(eol);
    return [
      [`base64 in ${width} wide CRLF lines`, `${lines('\r\n')}\r\n`, [github('wrapped+base64')]],
      [`base64 in ${width} wide LF lines`, lines('\n'), [github('wrapped+base64')]],
    ];
  }),
  [
    'as is, split by a line break',
    `${GITHUB.slice(0, 9)}\r\n${GITHUB.slice(9)}`,
    [github('wrapped')],
  ],
  [
    'as is and percent-encoded: each once',
    `${GITHUB} ${GITHUB} ${percent(GITHUB)}`,
    [github('raw'), github('percent')],
  ],
  ['an escaped backslash escapes no u', `"\\\\u0074${GITHUB.slice(1)}"`, []],
  ['a character beyond ASCII is none of a sentinel', `"\\u0174${GITHUB.slice(1)}"`, []],
  ['%-escapes with one hex digit decode nothing', `%7${GITHUB.slice(1)}`, []],
  ['nothing', 'GET / HTTP/1.1\r\nHost: example.test\r\n\r\n', []],
];

/** The body written in the given chunks. */
function scanChunks(chunks: readonly Buffer[]): readonly SentinelFinding[] {
  const scan = scanner.start();
  for (const chunk of chunks) scan.write(chunk);
  return scan.findings;
}

describe('sentinel scan', () => {
  it.each(cases)('%s', (_, body, expected) => {
    expect(scanner.scan(body)).toEqual(expected);
  });

  it.each(cases)('%s: split at every byte boundary, and byte by byte', (_, body, expected) => {
    const bytes = Buffer.from(body);
    for (let at = 0; at <= bytes.length; at++) {
      expect(scanChunks([bytes.subarray(0, at), bytes.subarray(at)]), `split at ${at}`).toEqual(
        expected,
      );
    }
    const single = [...bytes].map((b) => Buffer.from([b]));
    expect(scanChunks(single)).toEqual(expected);
  });

  it('finds two sentinels in one body, in the order first seen, each spelling once', () => {
    const body = `{"a":"${blob(AWS, 1, 'base64')}","g":"${GITHUB}","again":"${AWS}${GITHUB}"}`;
    expect(scanner.scan(body)).toEqual([
      { name: 'aws', spelling: 'base64' },
      github('raw'),
      { name: 'aws', spelling: 'raw' },
    ]);
  });

  it('answers each write with only what it found first', () => {
    const scan = scanner.start();
    const body = Buffer.from(`x ${GITHUB} y ${GITHUB} z ${percent(AWS)}`);
    const cut = body.indexOf(' y ');
    expect(scan.write(body.subarray(0, 12))).toEqual([]);
    expect(scan.write(body.subarray(12, cut))).toEqual([github('raw')]);
    expect(scan.write(body.subarray(cut, cut + 30))).toEqual([]);
    expect(scan.write(body.subarray(cut + 30))).toEqual([{ name: 'aws', spelling: 'percent' }]);
    expect(scan.findings).toHaveLength(2);
  });

  it('finds nothing where one character of a sentinel is changed, in any spelling', () => {
    const spellings: [string, (s: string) => string][] = [
      ['raw', (s) => s],
      ['percent', (s) => percent(s)],
      ['json', (s) => jsonU(s)],
      ...[0, 1, 2].flatMap((align): [string, (s: string) => string][] => [
        [`base64 ${align}`, (s) => blob(s, align, 'base64')],
        [`base64url ${align}`, (s) => blob(s, align, 'base64url')],
        [`percent base64 ${align}`, (s) => percent(blob(s, align, 'base64'))],
      ]),
    ];
    for (let i = 0; i < GITHUB.length; i++) {
      // Flips a bit in each half of the byte: base64 may leave out up to 4 bits at either end.
      const changed = GITHUB.slice(0, i) + String.fromCharCode(GITHUB.charCodeAt(i) ^ 0x11);
      const near = changed + GITHUB.slice(i + 1);
      for (const [spelling, spell] of spellings) {
        expect(scanner.scan(spell(near)), `${spelling}, character ${i}`).toEqual([]);
      }
    }
    // A prefix of the sentinel, whole sentinel cut short, is no sentinel either.
    expect(scanner.scan(GITHUB.slice(0, -1))).toEqual([]);
  });

  it('finds a sentinel at the end of a 1 MB body written in 64 KiB chunks', () => {
    const body = Buffer.concat([
      Buffer.alloc(1 << 20, 'lorem ipsum tgs_github_ %5 \\u00 '),
      Buffer.from(AWS),
    ]);
    const chunks: Buffer[] = [];
    for (let at = 0; at < body.length; at += 1 << 16)
      chunks.push(body.subarray(at, at + (1 << 16)));
    expect(scanChunks(chunks)).toEqual([{ name: 'aws', spelling: 'raw' }]);
  });

  it('refuses a sentinel short or of other characters, naming the credential', () => {
    for (const sentinel of [
      'tgs_short',
      'tgs_github-0123456789abcdef',
      'xyz_github_0123456789abcdef',
    ]) {
      const build = () => new SentinelScanner([{ name: 'bad', sentinel }]);
      expect(build).toThrow(TrajgateError);
      expect(build).toThrow(/credentials: bad: unusable sentinel/);
    }
    expect(new SentinelScanner([]).scan(GITHUB)).toEqual([]);
  });
});
