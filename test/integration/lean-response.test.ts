import { createServer } from 'node:http';
import type { OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/load.js';
import { headerObject } from '../../src/ingress/lean/header-object.js';
import { LeanResponse } from '../../src/ingress/lean/lean-response.js';
import type { RequestHead } from '../../src/ingress/lean/request-parser.js';
import { RequestParser } from '../../src/ingress/lean/request-parser.js';
import { proxyServerOptions } from '../../src/ingress/proxy.js';

/**
 * The lean engine's answers against node:http's, byte for byte but the Date: for each request
 * and each way trajgate writes an answer (raw or object fields, a length or none, several
 * writes, HEAD, 204, 304, HTTP/1.0 with and without keep-alive, `Connection: close` either
 * side), a real node:http server configured as the listener answers over loopback, and a
 * LeanResponse answers the same request as the lean parser read it. Both must write the same
 * bytes and agree on whether the connection closes after.
 */
const LIMITS = defaultConfig('/tmp', { HOME: '/tmp' }).limits;
const KEEP_ALIVE_MS = 5_000;

interface Script {
  readonly head: readonly [number, OutgoingHttpHeaders | readonly string[]];
  readonly writes?: readonly string[];
  readonly end?: string;
}

const GET11 = 'GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n';
const CASES: readonly { name: string; request: string; script: Script }[] = [
  {
    name: 'raw fields, no length',
    request: GET11,
    script: { head: [200, ['content-type', 'text/plain', 'X-A', '1']], end: 'hi' },
  },
  {
    name: 'two writes, chunked',
    request: GET11,
    script: { head: [200, ['content-type', 't']], writes: ['a'], end: 'b' },
  },
  {
    name: 'a length',
    request: GET11,
    script: { head: [200, ['content-length', '2']], writes: ['a'], end: 'b' },
  },
  {
    name: 'object fields (a refusal)',
    request: GET11,
    script: {
      head: [
        403,
        {
          'content-type': 'text/plain; charset=utf-8',
          'content-length': 3,
          'x-trajgate-verdict': 'PAUSE',
        },
      ],
      end: 'no\n',
    },
  },
  {
    name: 'client says close',
    request: 'GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n',
    script: { head: [200, ['content-type', 't']], end: 'hi' },
  },
  {
    name: 'HTTP/1.0',
    request: 'GET http://a.test/ HTTP/1.0\r\n\r\n',
    script: { head: [200, ['content-type', 't']], end: 'hi' },
  },
  {
    name: 'HTTP/1.0 keep-alive, no length',
    request: 'GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    script: { head: [200, ['content-type', 't']], end: 'hi' },
  },
  {
    name: 'HTTP/1.0 keep-alive, a length',
    request: 'GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    script: { head: [200, ['content-length', '2']], end: 'hi' },
  },
  {
    name: 'HTTP/1.0 asking for chunks',
    request: 'GET http://a.test/ HTTP/1.0\r\nTE: chunked\r\n\r\n',
    script: { head: [200, ['content-type', 't']], end: 'hi' },
  },
  {
    name: 'HEAD',
    request: 'HEAD http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n',
    script: { head: [200, ['content-length', '10']] },
  },
  {
    name: 'HEAD, no length',
    request: 'HEAD http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n',
    script: { head: [200, ['content-type', 't']] },
  },
  { name: '204', request: GET11, script: { head: [204, ['x', '1']] } },
  { name: '304', request: GET11, script: { head: [304, ['etag', '"1"']] } },
  {
    name: 'upstream says close',
    request: GET11,
    script: { head: [200, ['connection', 'close', 'content-length', '2']], end: 'hi' },
  },
  {
    name: 'upstream says keep-alive',
    request: 'GET http://a.test/ HTTP/1.0\r\n\r\n',
    script: { head: [200, ['Connection', 'keep-alive', 'content-length', '2']], end: 'hi' },
  },
  {
    name: 'chunked given',
    request: GET11,
    script: { head: [200, ['transfer-encoding', 'chunked']], end: 'hi' },
  },
  {
    name: 'a date given',
    request: GET11,
    script: { head: [200, ['date', 'Thu, 01 Jan 2026 00:00:00 GMT']] },
  },
  { name: 'empty body, no length', request: GET11, script: { head: [200, []] } },
  {
    name: 'repeated fields (object array)',
    request: GET11,
    script: { head: [200, { 'set-cookie': ['a=1', 'b=2'], 'content-length': 0 }] },
  },
];

function play(res: Pick<ServerResponse, 'writeHead' | 'write' | 'end'>, script: Script): void {
  res.writeHead(script.head[0], script.head[1] as OutgoingHttpHeaders);
  for (const w of script.writes ?? []) res.write(w);
  res.end(script.end);
}

const noDate = (text: string) => text.replace(/\r\nDate: [^\r]+/, '\r\nDate: X');

let server: Server;
let script: Script;
beforeAll(async () => {
  server = createServer(proxyServerOptions(LIMITS), (_req, res) => play(res, script));
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/**
 * node:http's answer, and whether it closed the connection after it: once the answer is whole
 * a second request follows on the same connection; the connection ending says closed, a second
 * answer beginning says open.
 */
function nodeAnswer(request: string, s: Script): Promise<{ text: string; closed: boolean }> {
  script = s;
  return new Promise((resolve) => {
    let text = '';
    let first: string | null = null;
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.setEncoding('latin1');
    socket.on('error', () => {});
    socket.write(request);
    const done = (closed: boolean) => {
      socket.destroy();
      resolve({ text: first ?? text, closed });
    };
    socket.on('data', (d: string) => {
      text += d;
      if (first !== null) return done(false);
      if (!wholeAnswer(text, request)) return;
      first = text;
      text = '';
      socket.write('GET http://a.test/probe HTTP/1.1\r\nHost: a.test\r\n\r\n');
    });
    socket.on('end', () => done(true));
  });
}

function wholeAnswer(text: string, request: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end);
  const body = text.slice(end + 4);
  if (request.startsWith('HEAD') || / (204|304) /.test(head.split('\r\n')[0] as string))
    return true;
  const length = /\r\ncontent-length: (\d+)/i.exec(head);
  if (length) return body.length >= Number(length[1]);
  if (/\r\ntransfer-encoding: chunked/i.test(head)) return body.endsWith('0\r\n\r\n');
  return false;
}

function leanAnswer(request: string, s: Script): { text: string; closed: boolean } {
  let head: RequestHead | undefined;
  const parser = new RequestParser(
    { messageBegin() {}, head: (h) => (head = h), body() {}, end() {} },
    LIMITS.headerBytes,
  );
  parser.feed(Buffer.from(request, 'latin1'));
  parser.close();
  const h = head as RequestHead;
  const headers = headerObject(h.rawHeaders);
  let text = '';
  let closed = false;
  const res = new LeanResponse(
    {
      headers,
      httpVersion: `${h.versionMajor}.${h.versionMinor}`,
      httpVersionMajor: h.versionMajor,
      complete: true,
    },
    {
      method: h.method,
      versionMajor: h.versionMajor,
      versionMinor: h.versionMinor,
      shouldKeepAlive: h.shouldKeepAlive,
      te: headers.te as string | undefined,
      keepAliveMs: KEEP_ALIVE_MS,
    },
    {
      write: (d) => ((text += typeof d === 'string' ? d : d.toString('latin1')), true),
      finished: (last) => (closed = last),
      destroy: () => (closed = true),
    },
  );
  play(res as unknown as ServerResponse, s);
  return { text, closed };
}

describe('the lean engine answers as node:http does', () => {
  it.each(CASES)('$name', async ({ request, script: s }) => {
    const expected = await nodeAnswer(request, s);
    const lean = leanAnswer(request, s);
    expect(noDate(lean.text)).toBe(noDate(expected.text));
    expect(lean.closed).toBe(expected.closed);
  });

  it('refuses a header value with CR or LF, as node:http does (no response splitting)', () => {
    expect(() => leanAnswer(GET11, { head: [200, ['x-a', 'v\r\nSet-Cookie: evil=1']] })).toThrow(
      /invalid character/,
    );
    expect(() => leanAnswer(GET11, { head: [200, ['bad name', 'v']] })).toThrow(/not a token/);
  });
});
