import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, exchange, parseHead, roundTrip } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Every bad request is refused the same way on each path into judgement: absolute-form on the
 * proxy listener, and origin-form inside a CONNECT tunnel trajgate reads (a host only method
 * patterns allow). One gateway for the file; each row is sent through both paths, must get the
 * same status, one refusal record, and never reach the upstream (not even a connection).
 */
const up = await startUpstream();
const UP = `127.0.0.1:${up.port}`;
let g: TestGateway;

beforeAll(async () => {
  g = await startTestGateway({
    network: { allow: [`GET ${UP}`, `POST ${UP}`], allowPrivate: ['127.0.0.1/32'] },
    limits: { headerBytes: 4096, headerTimeout: '2s' },
  });
});
afterAll(() => g.stop());

const refusals = () => g.records().filter((r): r is RefusalRecord => r.type === 'refusal');

type Path = 'listener' | 'tunnel';
const PATHS: readonly Path[] = ['listener', 'tunnel'];

/** A request's bytes, given its target: absolute-form on the listener, a path in the tunnel. */
type Bytes = (target: string, host: string) => string;

/** Sends one request through `path`; resolves with the answer once trajgate closes. */
async function send(path: Path, bytes: Bytes, at: string) {
  const host = `Host: ${UP}\r\n`;
  if (path === 'listener') return exchange(g.gw.proxy.port, bytes(`http://${UP}${at}`, host));
  const t = await connectTunnel(g.gw.proxy.port, UP);
  expect(t.status).toBe(200);
  const r = await roundTrip(t.socket, bytes(at, host));
  t.socket.destroy();
  return { ...parseHead(r.got), text: r.got, closed: r.closed };
}

/** Sends `bytes` through `path` and asserts the refusal: status, one record, nothing sent. */
async function expectRefused(path: Path, bytes: Bytes, status: number, why?: RegExp) {
  const before = refusals().length;
  const seen = up.seen.length;
  const connections = up.connections;
  const res = await send(path, bytes, `/row-${before}`);
  expect(res.status).toBe(status);
  expect(res.closed).toBe(true);
  await waitFor(() => refusals().length > before);
  expect(refusals()).toHaveLength(before + 1);
  const record = refusals().at(-1);
  expect(record).toMatchObject({ source: 'proxy', status });
  if (why) {
    expect(record?.reason).toMatch(why);
    // The agent reads the same line the journal keeps.
    expect(res.body).toMatch(new RegExp(`^trajgate: ${why.source.replace(/^\^/, '')}`, 'm'));
  }
  expect(up.seen).toHaveLength(seen);
  expect(up.connections).toBe(connections);
}

const CHUNKED = '5\r\nhello\r\n0\r\n\r\n';

describe("Node's parser refuses these on both paths: journaled, upstream untouched", () => {
  const rows: { name: string; bytes: Bytes; status?: number }[] = [
    {
      name: 'two Content-Length fields, different values',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
    },
    {
      name: 'two Content-Length fields, the same value',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello`,
    },
    {
      name: 'Content-Length and Transfer-Encoding',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED}`,
    },
    {
      name: 'Transfer-Encoding and Content-Length',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n${CHUNKED}`,
    },
    {
      name: 'Transfer-Encoding: identity with Content-Length',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello`,
    },
    {
      name: 'Transfer-Encoding: chunked, chunked',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: chunked, chunked\r\n\r\n${CHUNKED}`,
    },
    {
      name: 'Transfer-Encoding: chunked, gzip (chunked not last)',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: chunked, gzip\r\n\r\n${CHUNKED}`,
    },
    {
      name: 'obs-fold continuation line',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}X-A: a\r\n  folded\r\n\r\n`,
    },
    {
      name: 'bare LF line endings',
      bytes: (t, h) => `GET ${t} HTTP/1.1\n${h.replace('\r\n', '\n')}\n`,
    },
    {
      name: 'one header ended by a bare LF',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}X-A: a\nX-B: b\r\n\r\n`,
    },
    {
      name: 'a control character in a field value',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}X-A: a\x01b\r\n\r\n`,
    },
    {
      name: 'whitespace before the colon',
      bytes: (t, h) => `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding : chunked\r\n\r\n${CHUNKED}`,
    },
    {
      name: 'a header block over limits.headerBytes',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}X-Big: ${'a'.repeat(10_000)}\r\n\r\n`,
      status: 431,
    },
  ];
  for (const path of PATHS) {
    it.each(rows)(`${path}: $name`, async ({ bytes, status = 400 }) => {
      const why = status === 431 ? /^request header fields too large/ : /^malformed request/;
      await expectRefused(path, bytes, status, why);
    });
  }
});

describe('trajgate refuses these on both paths, in the same words', () => {
  const rows: { name: string; bytes: Bytes; status: number; why: RegExp }[] = [
    {
      name: 'Transfer-Encoding: gzip, chunked',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED}`,
      status: 501,
      why: /^transfer coding "gzip, chunked" is not supported \(only chunked\)$/,
    },
    {
      name: 'Transfer-Encoding: gzip and Transfer-Encoding: chunked on two lines',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED}`,
      status: 501,
      why: /^transfer coding "gzip, chunked"/,
    },
    {
      name: 'Transfer-Encoding: identity alone',
      bytes: (t, h) => `POST ${t} HTTP/1.1\r\n${h}Transfer-Encoding: identity\r\n\r\n`,
      status: 501,
      why: /^transfer coding "identity"/,
    },
    {
      name: 'HTTP/1.0 with Transfer-Encoding: gzip, chunked',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.0\r\n${h}Transfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED}`,
      status: 501,
      why: /^transfer coding "gzip, chunked"/,
    },
    {
      name: 'two Host fields',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}${h}\r\n`,
      status: 400,
      why: /^more than one Host field$/,
    },
    {
      name: 'no Host field in HTTP/1.1',
      bytes: (t) => `GET ${t} HTTP/1.1\r\nX-A: a\r\n\r\n`,
      status: 400,
      why: /^no Host field$/,
    },
    {
      name: 'an expectation other than 100-continue',
      bytes: (t, h) => `GET ${t} HTTP/1.1\r\n${h}Expect: bogus\r\n\r\n`,
      status: 417,
      why: /^expectation "bogus" is not supported/,
    },
    {
      name: 'HTTP/2.0 in the request line',
      bytes: (t, h) => `GET ${t} HTTP/2.0\r\n${h}\r\n`,
      status: 505,
      why: /^HTTP\/2\.0 is not supported/,
    },
    {
      name: 'a request line without a version (HTTP/0.9)',
      bytes: (t) => `GET ${t}\r\n\r\n`,
      status: 505,
      why: /^HTTP\/0\.9 is not supported/,
    },
    {
      name: 'credentials in an absolute-form target',
      bytes: (t, h) =>
        `GET ${t.startsWith('/') ? `http://agent:pw@${UP}${t}` : t.replace('//', '//agent:pw@')} HTTP/1.1\r\n${h}\r\n`,
      status: 400,
      why: /^credentials in the request URL are not allowed/,
    },
  ];
  for (const path of PATHS) {
    it.each(rows)(`${path}: $name → $status`, async ({ bytes, status, why }) => {
      await expectRefused(path, bytes, status, why);
    });
  }
});

describe('what one path accepts, the other does too', () => {
  const rows: { name: string; bytes: Bytes; body: string }[] = [
    {
      name: 'POST with Content-Length',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
      body: 'hello',
    },
    {
      name: 'HTTP/1.0 with Transfer-Encoding: chunked',
      bytes: (t, h) => `POST ${t} HTTP/1.0\r\n${h}Transfer-Encoding: chunked\r\n\r\n${CHUNKED}`,
      body: 'hello',
    },
    {
      name: 'Expect: 100-continue',
      bytes: (t, h) =>
        `POST ${t} HTTP/1.1\r\n${h}Expect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`,
      body: 'hello',
    },
  ];
  for (const path of PATHS) {
    it.each(rows)(`${path}: $name → 200, the body once`, async ({ bytes, body }) => {
      const seen = up.seen.length;
      const res = await send(path, bytes, `/ok-${path}`);
      // The last status line: a 100 Continue may come first.
      expect([...res.text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].at(-1)?.[1]).toBe('200');
      expect(up.seen.slice(seen).map((s) => [s.url, s.body])).toEqual([[`/ok-${path}`, body]]);
    });
  }

  it('absolute-form inside the tunnel passes the same rules: gzip, chunked → 501', async () => {
    const bytes: Bytes = (t, h) =>
      `POST http://${UP}${t} HTTP/1.1\r\n${h}Transfer-Encoding: gzip, chunked\r\n\r\n${CHUNKED}`;
    await expectRefused('tunnel', bytes, 501, /^transfer coding "gzip, chunked"/);
  });

  it('an absolute-form request naming the tunnel’s own origin is served inside it', async () => {
    const seen = up.seen.length;
    const bytes: Bytes = (_t, h) =>
      `GET http://${UP}/abs HTTP/1.1\r\n${h}Connection: close\r\n\r\n`;
    const res = await send('tunnel', bytes, '/abs');
    expect(res.status).toBe(200);
    expect(up.seen.slice(seen).map((s) => s.url)).toEqual(['/abs']);
  });
});
