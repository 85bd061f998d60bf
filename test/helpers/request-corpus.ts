import { gzipSync } from 'node:zlib';

/**
 * The raw requests of the proxy's bad-input, smuggling and disagreement suites, in one place:
 * those suites send them to a gateway and check its answer; the lean parser's differential test
 * feeds every one to both parsers. Each is built for an upstream on 127.0.0.1:`port`.
 */
export type RawRow = { readonly name: string; readonly bytes: (port: number) => string };

export const origin = (port: number) => `http://127.0.0.1:${port}`;
export const hostLine = (port: number) => `Host: 127.0.0.1:${port}\r\n`;
const CHUNKED_HELLO = '5\r\nhello\r\n0\r\n\r\n';
const U = origin;
const H = hostLine;

/** An absolute-form GET the proxy reads as one request, then closes. */
export const absoluteGet = (target: string, host = `Host: ${new URL(target).host}\r\n`) =>
  `GET ${target} HTTP/1.1\r\n${host}Connection: close\r\n\r\n`;

/** `CONNECT authority` with optional extra header lines. */
export const connectHead = (authority: string, headers: Record<string, string> = {}) =>
  `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/**
 * Loopback in the spellings an egress check must see through (bad-input). `allowAs`: how an
 * allow pattern names it where the IPv4 pattern does not cover it, so egress decides.
 */
export const LOOPBACK_SPELLINGS: readonly {
  readonly name: string;
  readonly host: string;
  readonly allowAs?: string;
}[] = [
  { name: '127.1', host: '127.1' },
  { name: '0x7f.0.0.1', host: '0x7f.0.0.1' },
  { name: '2130706433', host: '2130706433' },
  { name: '0177.0.0.1', host: '0177.0.0.1' },
  {
    name: '[::ffff:127.0.0.1] (IPv4-mapped IPv6)',
    host: '[::ffff:127.0.0.1]',
    allowAs: '[::ffff:7f00:1]',
  },
];

/** Framings llhttp refuses (RFC 9112 § 6.1, § 6.3, § 5.2) and lines it cannot read. */
export const SMUGGLING_REFUSED: readonly RawRow[] = [
  {
    name: 'Transfer-Encoding: chunked, gzip (final coding not chunked)',
    bytes: (p) =>
      `POST ${U(p)}/te HTTP/1.1\r\n${H(p)}Transfer-Encoding: chunked, gzip\r\n\r\n${CHUNKED_HELLO}`,
  },
  {
    name: 'Transfer-Encoding: chunked, chunked (chunked applied twice)',
    bytes: (p) =>
      `POST ${U(p)}/te2 HTTP/1.1\r\n${H(p)}Transfer-Encoding: chunked, chunked\r\n\r\n${CHUNKED_HELLO}`,
  },
  {
    name: 'two Content-Length fields with different values',
    bytes: (p) =>
      `POST ${U(p)}/cl HTTP/1.1\r\n${H(p)}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
  },
  {
    name: 'Content-Length list "5, 6"',
    bytes: (p) => `POST ${U(p)}/cl-list HTTP/1.1\r\n${H(p)}Content-Length: 5, 6\r\n\r\nhello!`,
  },
  {
    name: 'Content-Length then Transfer-Encoding: chunked',
    bytes: (p) =>
      `POST ${U(p)}/clte HTTP/1.1\r\n${H(p)}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED_HELLO}`,
  },
  {
    name: 'Transfer-Encoding: chunked then Content-Length',
    bytes: (p) =>
      `POST ${U(p)}/tecl HTTP/1.1\r\n${H(p)}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n${CHUNKED_HELLO}`,
  },
  {
    name: 'obs-fold header continuation line',
    bytes: (p) => `GET ${U(p)}/fold HTTP/1.1\r\n${H(p)}X-A: a\r\n  folded\r\n\r\n`,
  },
  {
    name: 'control character in a header value',
    bytes: (p) => `GET ${U(p)}/ctl HTTP/1.1\r\n${H(p)}X-A: a\x01b\r\n\r\n`,
  },
  {
    name: 'whitespace between field name and colon',
    bytes: (p) =>
      `POST ${U(p)}/ws HTTP/1.1\r\n${H(p)}Transfer-Encoding : chunked\r\n\r\n${CHUNKED_HELLO}`,
  },
  { name: 'garbage request line', bytes: () => 'HELLO THERE\r\n\r\n' },
  { name: 'binary garbage', bytes: () => '\x00\x01\x02\x03 nonsense\r\n\r\n' },
];

/** Framings llhttp accepts: each must reach the upstream as one message with body `hello`. */
export const SMUGGLING_ACCEPTED: readonly RawRow[] = [
  {
    name: 'Content-Length: 5',
    bytes: (p) =>
      `POST ${U(p)}/ok-cl HTTP/1.1\r\n${H(p)}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
  },
  {
    name: 'Content-Length: 05 (leading zero is still 1*DIGIT)',
    bytes: (p) =>
      `POST ${U(p)}/ok-cl05 HTTP/1.1\r\n${H(p)}Content-Length: 05\r\nConnection: close\r\n\r\nhello`,
  },
  {
    name: 'Transfer-Encoding: chunked',
    bytes: (p) =>
      `POST ${U(p)}/ok-te HTTP/1.1\r\n${H(p)}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${CHUNKED_HELLO}`,
  },
  {
    name: 'Transfer-Encoding on HTTP/1.0 (RFC 9112 § 6.1: faulty framing, close after)',
    bytes: (p) =>
      `POST ${U(p)}/ok-te10 HTTP/1.0\r\n${H(p)}Transfer-Encoding: chunked\r\n\r\n${CHUNKED_HELLO}`,
  },
];

/** `gzip, chunked`: valid framing whose coding trajgate will not pass on undecoded (501). */
export function gzipChunked(port: number): Buffer {
  const gz = gzipSync('hello');
  const head = `POST ${U(port)}/gzip HTTP/1.1\r\n${H(port)}Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n`;
  const size = Buffer.from(`${gz.length.toString(16)}\r\n`);
  return Buffer.concat([Buffer.from(head), size, gz, Buffer.from('\r\n0\r\n\r\n')]);
}

/** A head of 10,000 bytes of one field: past a 4,096-byte limits.headerBytes (431). */
export const oversizedHead = (p: number) =>
  `GET ${U(p)}/big HTTP/1.1\r\n${H(p)}X-Big: ${'a'.repeat(10_000)}\r\n\r\n`;

/**
 * A chunked POST whose head holds `fields` fields in all, Transfer-Encoding the last: past
 * 1,000, node:http's `headers` no longer holds it while llhttp still frames the body by it.
 */
export const manyFields = (p: number, fields: number) => {
  const filler = Array.from({ length: fields - 3 }, (_, i) => `X-F${i}: v\r\n`).join('');
  return `POST ${U(p)}/many HTTP/1.1\r\n${H(p)}Connection: close\r\n${filler}Transfer-Encoding: chunked\r\n\r\n${CHUNKED_HELLO}`;
};

/** An origin-form GET: refused on the listener (absolute-form wanted), fine inside a tunnel. */
export const originGet = (p: number, path = '/') =>
  `GET ${path} HTTP/1.1\r\n${H(p)}Connection: close\r\n\r\n`;

/** Paths another server resolves differently from trajgate, and who does (disagreements). */
export const DISAGREEING_PATHS: readonly (readonly [path: string, who: string])[] = [
  ['/v1/..%2fadmin', 'nginx and routers that decode before resolving dot segments'],
  ['/v1/..%5cadmin', 'IIS: "\\" is a separator'],
  ['/v1/..;/admin', 'Tomcat/Spring drop ";" parameters, then resolve'],
  ['/v1/%252e%252e/admin', 'decoded twice'],
  ['/v1/%c0%ae%c0%ae/admin', 'overlong UTF-8 "."'],
  ['/v1/%ef%bc%8e%ef%bc%8e/admin', 'fullwidth dots (NFKC)'],
  ['/v1/x%00.json', 'NUL truncation'],
  ['/v1/x%0d%0aGET%20/admin', 'CR LF: request splitting at the next hop'],
];

/** A disagreeing path inside a CONNECT tunnel trajgate reads. */
export const tunnelledSemicolon = (p: number) => `GET /v1/..;/admin HTTP/1.1\r\n${H(p)}\r\n`;

/** Spellings the URL parser resolves, the status and the path the upstream then sees. */
export const RESOLVED_PATHS: readonly (readonly [string, number, string | null])[] = [
  ['/v1//../admin', 200, '/v1/admin'],
  ['/v1/x#/../../admin', 200, '/v1/x'],
  ['/v1/@types%2fnode', 200, '/v1/@types%2fnode'],
  ['/v1/%2e%2e/admin', 403, null],
  ['/v10/x', 403, null],
];

export const upload = (p: number, path: string) =>
  `POST ${U(p)}${path} HTTP/1.1\r\n${H(p)}Connection: close\r\nContent-Length: 2\r\n\r\nhi`;

/** Method, authority and framing that llhttp or trajgate refuses, and the reason it gives. */
export const FRAMING_REFUSED: readonly (readonly [string, (p: number) => string, RegExp])[] = [
  ['lower-case method', (p) => `get ${U(p)}/v1/x HTTP/1.1\r\n${H(p)}\r\n`, /HPE_INVALID_METHOD/],
  [
    'two equal Content-Length',
    (p) =>
      `POST ${U(p)}/upload HTTP/1.1\r\n${H(p)}Content-Length: 2\r\nContent-Length: 2\r\n\r\nhi`,
    /Duplicate Content-Length/,
  ],
  [
    'Content-Length: +2',
    (p) => `POST ${U(p)}/upload HTTP/1.1\r\n${H(p)}Content-Length: +2\r\n\r\nhi`,
    /HPE_INVALID_CONTENT_LENGTH/,
  ],
  [
    'two Transfer-Encoding: chunked lines',
    (p) =>
      `POST ${U(p)}/upload HTTP/1.1\r\n${H(p)}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n`,
    /HPE_INVALID_TRANSFER_ENCODING/,
  ],
  [
    'bare LF ending a field',
    (p) => `GET ${U(p)}/v1/x HTTP/1.1\r\n${H(p)}X-A: a\nX-B: b\r\n\r\n`,
    /HPE_CR_EXPECTED/,
  ],
  [
    'tab in the request target',
    (p) => `GET ${U(p)}/v1/\t../admin HTTP/1.1\r\n${H(p)}\r\n`,
    /HPE_INVALID_URL/,
  ],
  [
    'userinfo before the host',
    (p) => `GET http://evil@127.0.0.1:${p}/v1/x HTTP/1.1\r\n${H(p)}\r\n`,
    /credentials in the request URL/,
  ],
  [
    'IPv6 zone id',
    (p) => `GET http://[fe80::1%25lo]:${p}/v1/x HTTP/1.1\r\n${H(p)}\r\n`,
    /invalid request URL/,
  ],
];

/** Authorities trajgate forwards with Host set to the one it judged. */
export const HOST_REWRITES: readonly (readonly [string, (p: number) => string])[] = [
  [
    'a Host other than the URL authority',
    (p) => absoluteGet(`${U(p)}/v1/x`, 'Host: admin.internal\r\n'),
  ],
  [
    'a percent-encoded host',
    (p) => `GET http://%31%32%37.0.0.1:${p}/v1/x HTTP/1.1\r\n${H(p)}Connection: close\r\n\r\n`,
  ],
  [
    'a trailing dot',
    (p) => `GET http://127.0.0.1.:${p}/v1/x HTTP/1.1\r\n${H(p)}Connection: close\r\n\r\n`,
  ],
];

/** Chunked with OWS around the coding and a chunk extension: decoded, re-framed (`hi`). */
export const oddChunked = (p: number) =>
  `POST ${U(p)}/upload HTTP/1.1\r\n${H(p)}Connection: close\r\nTransfer-Encoding: \t chunked\r\n\r\n2;ext=1\r\nhi\r\n0\r\n\r\n`;

/** Every request above as bytes, named, for an upstream on `port`. */
export function corpusRequests(port: number): { name: string; bytes: Buffer }[] {
  const text = (name: string, s: string) => ({ name, bytes: Buffer.from(s, 'latin1') });
  const rows = (list: readonly RawRow[]) => list.map((r) => text(r.name, r.bytes(port)));
  return [
    ...LOOPBACK_SPELLINGS.map((r) => text(r.name, absoluteGet(`http://${r.host}:${port}/`))),
    text('CONNECT', connectHead(`127.0.0.1:${port}`)),
    ...rows(SMUGGLING_REFUSED),
    ...rows(SMUGGLING_ACCEPTED),
    { name: 'gzip, chunked', bytes: gzipChunked(port) },
    text('oversized head', oversizedHead(port)),
    text('origin-form', originGet(port)),
    text('tunnelled GET', originGet(port, '/tunnelled')),
    ...DISAGREEING_PATHS.map(([path]) => text(path, absoluteGet(`${U(port)}${path}`))),
    text('tunnelled ..;', tunnelledSemicolon(port)),
    ...RESOLVED_PATHS.map(([path]) => text(path, absoluteGet(`${U(port)}${path}`))),
    text('upload', upload(port, '/upload')),
    ...FRAMING_REFUSED.map(([name, bytes]) => text(name, bytes(port))),
    ...HOST_REWRITES.map(([name, bytes]) => text(name, bytes(port))),
    text('odd chunked', oddChunked(port)),
  ];
}
