/**
 * The pieces the generated request corpus (request-mutations.ts) is made of: valid requests to
 * mutate and pipeline, and for each part of a request the spellings worth trying, valid, odd
 * and invalid (RFC 9112 § 3 request line, § 5 fields, § 6 framing, § 7.1 chunks).
 */
export const HOST = 'Host: a.test\r\n';
export const CHUNKED = 'Transfer-Encoding: chunked\r\n';
export const HELLO = '5\r\nhello\r\n0\r\n\r\n';

/** Valid requests the mutations start from and pipelines are made of. */
export const BASES: readonly string[] = [
  `GET http://a.test/x?y=1 HTTP/1.1\r\n${HOST}Accept: */*\r\n\r\n`,
  `GET / HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
  `POST http://a.test/up HTTP/1.1\r\n${HOST}Content-Length: 5\r\n\r\nhello`,
  `POST /up HTTP/1.1\r\n${HOST}${CHUNKED}\r\n3;e=1\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n`,
  `GET /old HTTP/1.0\r\n${HOST}\r\n`,
  `GET /ka HTTP/1.0\r\n${HOST}Connection: keep-alive\r\n\r\n`,
  `CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n`,
  `GET /ws HTTP/1.1\r\n${HOST}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
  `PUT http://a.test/p HTTP/1.1\r\n${HOST}Expect: 100-continue\r\nContent-Length: 2\r\n\r\nhi`,
];

export const METHODS = [
  'GET',
  'POST',
  'CONNECT',
  'get',
  'FOO',
  'M-SEARCH',
  'QUERY',
  'PRI',
  'DESCRIBE',
  '',
];
export const TARGETS = [
  '/',
  'http://a.test/x?y=1',
  'a.test:443',
  '*',
  '/a b',
  '/a\tb',
  '/a#f',
  '/%00',
  '/\x7f',
  '/\x80\xff',
  'http://a.test',
  'HTTP://A.TEST/',
  '//a.test/x',
  'http://u:p@a.test/',
  '',
];
export const VERSIONS = [
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/0.9',
  'HTTP/2.0',
  'HTTP/1.2',
  'HTTP/3.0',
  'HTTP/1',
  'http/1.1',
  '',
  'HTTP/1.1 ',
  'HTTP/11',
  'RTSP/1.0',
  'ICE/1.0',
];
export const NAMES = [
  'X-A',
  'host',
  'X A',
  'X\tA',
  '',
  '(X)',
  'X"',
  'X\x00',
  'X\x7f',
  'X\x80',
  'é',
  ' X',
];
export const COLONS = [': ', ':', ' : ', ':\t', '\t:', ': \t ', '::'];
export const VALUES = [
  'v',
  '',
  ' v ',
  'v\tv',
  'a\x00b',
  'a\rb',
  'a\x01b',
  'a\x7fb',
  'a\x80\xffb',
  '"q"',
  'a,b',
  'v\t',
];
export const EOLS = ['\n', '\r', '\r\r\n', '\n\r', '\r\n ', '\r\n\t', '\r \n'];
export const LENGTHS = [
  '0',
  '5',
  '05',
  '+5',
  '-5',
  ' 5',
  '5 ',
  '5,5',
  '5, 5',
  '5,6',
  '0x5',
  '5.0',
  '',
  'a',
  '18446744073709551615',
  '18446744073709551616',
  '5\x00',
];
export const CODINGS = [
  'chunked',
  'Chunked',
  'CHUNKED',
  ' chunked',
  'chunked ',
  'chunked\t',
  'gzip, chunked',
  'chunked, gzip',
  'identity',
  'identity, chunked',
  'gzip',
  'xchunked',
  'chunkedx',
  'chunked;q=1',
  'chunked,',
  ',chunked',
  'chunked , chunked',
  '"chunked"',
  'chunk ed',
  'chunked\x0b',
  'deflate,chunked',
];
export const SIZES = [
  '5',
  '05',
  '0005',
  '0x5',
  '5 ',
  '5\t',
  ' 5',
  '-5',
  '+5',
  'A',
  'a',
  'fffffffffffffffff',
];
export const EXTENSIONS = [
  '',
  ';',
  ';a',
  ';a=b',
  ';a="b"',
  ';a="b;c"',
  ' ;a=b',
  '; a=b',
  ';a =b',
  ';a= b',
];
export const EXT_BYTES = ['\x00', '\x7f', '\x80', '\x01', '"', '\r', '\n'];
export const DATA_ENDS = ['\r\n', '', '\n', 'XX'];
export const LAST = ['0', '00', '0;e=1', '0 ', '0\t'];
export const TRAILERS = [
  '',
  'T: 1\r\n',
  'Content-Length: 5\r\n',
  'T : 1\r\n',
  ' T: 1\r\n',
  'T: a\x00\r\n',
];
export const FINALS = ['\r\n', '\n', ''];
export const JOINS = ['', '\r\n', '\r\n\r\n', '\n', ' '];
export const BYTES = ['\x00', '\r', '\n', ' ', '\t', ':', '\x7f', '\x80', '\xff', '"', ';', ','];
