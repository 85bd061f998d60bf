import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import {
  gzipChunked,
  origin,
  originGet,
  oversizedHead,
  SMUGGLING_ACCEPTED,
  SMUGGLING_REFUSED,
} from '../helpers/request-corpus.js';
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

const U = () => origin(upstream.port);

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
  it.each(SMUGGLING_REFUSED)('$name', async (row) => {
    const before = refusals().length;
    const seen = upstream.seen.length;
    const connections = upstream.connections;
    const res = await exchange(g.gw.proxy.port, row.bytes(upstream.port));
    expect(res.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(res.closed).toBe(true);
    expect(res.body).toContain('malformed request');
    expect(upstream.seen).toHaveLength(seen);
    expect(upstream.connections).toBe(connections);
    await expectRefused(400, before, /^malformed request \(HPE_/);
  });

  // Framings Node accepts must reach the upstream as one unambiguous message with the body.
  it.each(SMUGGLING_ACCEPTED)(
    'accepted: $name → upstream gets exactly the body, one framing',
    async (row) => {
      const seen = upstream.seen.length;
      const res = await exchange(g.gw.proxy.port, row.bytes(upstream.port));
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
    const seen = upstream.seen.length;
    const res = await exchange(g.gw.proxy.port, [gzipChunked(upstream.port)]);
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
    const res = await exchange(g.gw.proxy.port, oversizedHead(upstream.port));
    expect(res.status).toBe(431);
    expect(res.body).toContain('request header fields too large');
    await expectRefused(431, before);
  });

  it('origin-form request (GET / HTTP/1.1) → 400 asking for absolute-form', async () => {
    const before = refusals().length;
    const res = await exchange(g.gw.proxy.port, originGet(upstream.port));
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
