import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import type { RefusalRecord } from '../../src/journal/records.js';

/**
 * Malformed and ambiguous requests over raw sockets, all against ONE gateway so the last test
 * can show it survived every one of them: each is answered with a status line, journaled as a
 * refusal, never reaches the upstream, and a normal request still works afterwards.
 */
const upstream = await startUpstream();
let g: TestGateway;
/** Every refusal status this file provoked, in order; the journal must hold the same. */
const provoked: number[] = [];

beforeAll(async () => {
  g = await startTestGateway({
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    limits: { headerBytes: 4096, headerTimeout: '1s' },
  });
});
afterAll(() => g.stop());

const U = () => `http://127.0.0.1:${upstream.port}`;
const H = () => `Host: 127.0.0.1:${upstream.port}\r\n`;
const CHUNKED_HELLO = '5\r\nhello\r\n0\r\n\r\n';

function refusals(): RefusalRecord[] {
  return g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
}

/** The newest refusal must be the one this row caused; and the gateway still serves. */
async function expectRefused(status: number, before: number, reason?: RegExp) {
  provoked.push(status);
  const list = refusals();
  expect(list).toHaveLength(before + 1);
  expect(list.at(-1)).toMatchObject({ type: 'refusal', source: 'proxy', status });
  if (reason) expect(list.at(-1)?.reason).toMatch(reason);
  const seen = upstream.seen.length;
  const ok = await curl(['-x', g.proxyUrl, `${U()}/still-serving`]);
  expect(ok.status).toBe(200);
  expect(upstream.seen.slice(seen).map((r) => r.url)).toEqual(['/still-serving']);
}

describe('request smuggling shapes (RFC 9112 § 6.1, § 6.3) → 400, upstream untouched', () => {
  const rows: { name: string; bytes: () => string }[] = [
    {
      name: 'Transfer-Encoding: chunked, gzip (final coding not chunked)',
      bytes: () =>
        `POST ${U()}/te HTTP/1.1\r\n${H()}Transfer-Encoding: chunked, gzip\r\n\r\n${CHUNKED_HELLO}`,
    },
    {
      name: 'Transfer-Encoding: chunked, chunked (chunked applied twice)',
      bytes: () =>
        `POST ${U()}/te2 HTTP/1.1\r\n${H()}Transfer-Encoding: chunked, chunked\r\n\r\n${CHUNKED_HELLO}`,
    },
    {
      name: 'two Content-Length fields with different values',
      bytes: () =>
        `POST ${U()}/cl HTTP/1.1\r\n${H()}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
    },
    {
      name: 'Content-Length list "5, 6"',
      bytes: () => `POST ${U()}/cl-list HTTP/1.1\r\n${H()}Content-Length: 5, 6\r\n\r\nhello!`,
    },
    {
      name: 'Content-Length then Transfer-Encoding: chunked',
      bytes: () =>
        `POST ${U()}/clte HTTP/1.1\r\n${H()}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED_HELLO}`,
    },
    {
      name: 'Transfer-Encoding: chunked then Content-Length',
      bytes: () =>
        `POST ${U()}/tecl HTTP/1.1\r\n${H()}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n${CHUNKED_HELLO}`,
    },
    {
      name: 'obs-fold header continuation line',
      bytes: () => `GET ${U()}/fold HTTP/1.1\r\n${H()}X-A: a\r\n  folded\r\n\r\n`,
    },
    {
      name: 'control character in a header value',
      bytes: () => `GET ${U()}/ctl HTTP/1.1\r\n${H()}X-A: a\x01b\r\n\r\n`,
    },
    {
      name: 'whitespace between field name and colon',
      bytes: () =>
        `POST ${U()}/ws HTTP/1.1\r\n${H()}Transfer-Encoding : chunked\r\n\r\n${CHUNKED_HELLO}`,
    },
    { name: 'garbage request line', bytes: () => 'HELLO THERE\r\n\r\n' },
    { name: 'binary garbage', bytes: () => '\x00\x01\x02\x03 nonsense\r\n\r\n' },
  ];

  it.each(rows)('$name', async (row) => {
    const before = refusals().length;
    const seen = upstream.seen.length;
    const connections = upstream.connections;
    const res = await exchange(g.gw.proxy.port, row.bytes());
    expect(res.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(res.closed).toBe(true);
    expect(res.body).toContain('malformed request');
    expect(upstream.seen).toHaveLength(seen);
    expect(upstream.connections).toBe(connections);
    await expectRefused(400, before, /^malformed request \(HPE_/);
  });

  // Framings Node accepts must reach the upstream as one unambiguous message with the body.
  const accepted: { name: string; bytes: () => string }[] = [
    {
      name: 'Content-Length: 5',
      bytes: () =>
        `POST ${U()}/ok-cl HTTP/1.1\r\n${H()}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
    },
    {
      name: 'Content-Length: 05 (leading zero is still 1*DIGIT)',
      bytes: () =>
        `POST ${U()}/ok-cl05 HTTP/1.1\r\n${H()}Content-Length: 05\r\nConnection: close\r\n\r\nhello`,
    },
    {
      name: 'Transfer-Encoding: chunked',
      bytes: () =>
        `POST ${U()}/ok-te HTTP/1.1\r\n${H()}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${CHUNKED_HELLO}`,
    },
    {
      name: 'Transfer-Encoding on HTTP/1.0 (RFC 9112 § 6.1: faulty framing, close after)',
      bytes: () =>
        `POST ${U()}/ok-te10 HTTP/1.0\r\n${H()}Transfer-Encoding: chunked\r\n\r\n${CHUNKED_HELLO}`,
    },
  ];

  it.each(accepted)(
    'accepted: $name → upstream gets exactly the body, one framing',
    async (row) => {
      const seen = upstream.seen.length;
      const res = await exchange(g.gw.proxy.port, row.bytes());
      expect(res.status).toBe(200);
      expect(res.closed).toBe(true);
      const got = upstream.seen.slice(seen);
      expect(got).toHaveLength(1);
      const headers = got[0]?.headers ?? {};
      expect(
        headers['content-length'] !== undefined && headers['transfer-encoding'] !== undefined,
      ).toBe(false);
      // The body is streamed to the upstream unchanged (it was once drained by a byte counter).
      expect(got[0]?.body).toBe('hello');
    },
  );

  it('a transfer coding other than chunked is refused 501, never passed on undecoded', async () => {
    // `gzip, chunked` is valid framing (chunked is final), so Node accepts it. RFC 9112 § 6.1:
    // a recipient may decode a transfer coding only if it changes Transfer-Encoding to match.
    const gz = gzipSync('hello');
    const head = `POST ${U()}/gzip HTTP/1.1\r\n${H()}Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n`;
    const body = Buffer.concat([
      Buffer.from(`${gz.length.toString(16)}\r\n`),
      gz,
      Buffer.from('\r\n0\r\n\r\n'),
    ]);
    const seen = upstream.seen.length;
    const res = await exchange(g.gw.proxy.port, [Buffer.concat([Buffer.from(head), body])]);
    const got = upstream.seen.slice(seen);
    // Only chunked is decoded; anything else is refused rather than passed on undecoded.
    expect(res.status).toBe(501);
    expect(got).toHaveLength(0);
    provoked.push(res.status);
  });
});

describe('limits and request form', () => {
  it('headers beyond limits.headerBytes (4096) → 431', async () => {
    const before = refusals().length;
    const big = `X-Big: ${'a'.repeat(10_000)}\r\n`;
    const res = await exchange(g.gw.proxy.port, `GET ${U()}/big HTTP/1.1\r\n${H()}${big}\r\n`);
    expect(res.status).toBe(431);
    expect(res.body).toContain('request header fields too large');
    await expectRefused(431, before);
  });

  it('origin-form request (GET / HTTP/1.1) → 400 asking for absolute-form', async () => {
    const before = refusals().length;
    const res = await exchange(
      g.gw.proxy.port,
      `GET / HTTP/1.1\r\n${H()}Connection: close\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toContain('absolute-form');
    await expectRefused(400, before, /absolute-form/);
    expect(refusals().at(-1)).toMatchObject({ method: 'GET', target: '/' });
  });
});

describe('after all of that', () => {
  it('the gateway is alive and journaled one refusal per bad request, nothing forwarded', async () => {
    expect(provoked.length).toBeGreaterThanOrEqual(13);
    const ok = await curl(['-x', g.proxyUrl, `${U()}/final`]);
    expect(ok.status).toBe(200);
    expect(refusals().map((r) => r.status)).toEqual(provoked);
    // Only the rows meant to pass ever reached the upstream.
    const urls = new Set(upstream.seen.map((r) => r.url));
    for (const url of urls) expect(url).toMatch(/^\/(still-serving|final|gzip|ok-[a-z0-9]+)$/);
  });
});
