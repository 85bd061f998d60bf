import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, exchange, roundTrip } from '../helpers/raw.js';
import {
  absoluteGet,
  DISAGREEING_PATHS,
  FRAMING_REFUSED,
  HOST_REWRITES,
  oddChunked,
  origin,
  RESOLVED_PATHS,
  tunnelledSemicolon,
  upload,
} from '../helpers/request-corpus.js';
import { startUpstream } from '../helpers/upstream.js';
import type { EventRecord, RefusalRecord } from '../../src/journal/records.js';

/**
 * Spellings on which trajgate and an upstream could disagree about the resource, against
 * `GET …/v1/` and `POST …/upload`: each is refused with one journal record, or judged and
 * forwarded in exactly the form judged. The upstream never sees a path outside the prefixes.
 */
const upstream = await startUpstream();
let g: TestGateway;

beforeAll(async () => {
  g = await startTestGateway({
    network: {
      allow: [
        `GET http://127.0.0.1:${upstream.port}/v1/`,
        `POST http://127.0.0.1:${upstream.port}/upload`,
      ],
      allowPrivate: ['127.0.0.1/32'],
    },
    // Unapproved rows stay REVIEW (403), so one row's refusal never holds the next.
    policy: {
      boundaries: {
        network: { kinds: ['network'], unless: 'approved', reviewAt: 1, pauseAt: 1000 },
      },
    },
  });
});
afterAll(() => g.stop());

const U = () => origin(upstream.port);
const get = (path: string) => absoluteGet(`${U()}${path}`);

/** Decision records (events and refusals); outcomes ride along later and decide nothing. */
function decisions(): (EventRecord | RefusalRecord)[] {
  return g
    .records()
    .filter((r): r is EventRecord | RefusalRecord => r.type === 'event' || r.type === 'refusal');
}

/** Sends `bytes`, returns the answer, the one decision it was journaled as, and what got through. */
async function send(bytes: string) {
  const before = decisions().length;
  const seen = upstream.seen.length;
  const res = await exchange(g.gw.proxy.port, Buffer.from(bytes, 'latin1'));
  // Decisions are written (writeSync) before the answer goes out: no wait needed.
  const added = decisions().slice(before);
  expect(added).toHaveLength(1);
  return { res, record: added[0], forwarded: upstream.seen.slice(seen) };
}

describe('paths another server resolves differently → 400, nothing forwarded', () => {
  it.each(DISAGREEING_PATHS)('%s (%s)', async (path) => {
    const { res, record, forwarded } = await send(get(path));
    expect(res.status).toBe(400);
    expect(res.body).toMatch(
      /^trajgate: path ".*" (hides a dot segment|decodes to a control|contains overlong)/,
    );
    expect(record).toMatchObject({ type: 'refusal', status: 400, session: '127.0.0.1' });
    expect((record as RefusalRecord).target).toBe(`${U()}${path}`);
    expect(forwarded).toEqual([]);
  });

  it('inside a CONNECT tunnel read request by request, the same path is refused the same way', async () => {
    const tunnel = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${upstream.port}`);
    expect(tunnel.status).toBe(200);
    const before = decisions().length;
    const seen = upstream.seen.length;
    const { got } = await roundTrip(tunnel.socket, tunnelledSemicolon(upstream.port), (text) =>
      text.includes('\r\n\r\n'),
    );
    tunnel.socket.destroy();
    expect(got).toMatch(/^HTTP\/1\.1 400 /);
    expect(decisions().slice(before)).toMatchObject([{ type: 'refusal', status: 400 }]);
    expect((decisions().at(-1) as RefusalRecord).reason).toMatch(/^path "\/v1\/..;\/admin" hides/);
    expect(upstream.seen.slice(seen)).toEqual([]);
  });

  it('curl --path-as-is: an encoded dot segment is refused, a literal one judged resolved', async () => {
    const refused = await curl(['-x', g.proxyUrl, '--path-as-is', `${U()}/v1/..%2fadmin`]);
    expect(refused.status).toBe(400);
    const resolved = await curl(['-x', g.proxyUrl, '--path-as-is', `${U()}/v1/../admin`]);
    expect(resolved.status).toBe(403);
    expect(decisions().at(-1)).toMatchObject({ type: 'event', verdict: 'REVIEW' });
  });
});

describe('spellings the URL parser resolves: judged and forwarded in one form', () => {
  it.each(RESOLVED_PATHS)('%s → %i, upstream sees %s', async (path, status, reached) => {
    const { res, record, forwarded } = await send(get(path));
    expect(res.status).toBe(status);
    expect(record).toMatchObject({ type: 'event', verdict: status === 200 ? 'ALLOW' : 'REVIEW' });
    expect(forwarded.map((r) => r.url)).toEqual(reached === null ? [] : [reached]);
  });

  it('POST …/upload does not cover /uploads (a prefix ends on a segment)', async () => {
    const ok = await send(upload(upstream.port, '/upload'));
    expect(ok.res.status).toBe(200);
    const next = await send(upload(upstream.port, '/uploads'));
    expect(next.res.status).toBe(403);
    expect(next.forwarded).toEqual([]);
  });
});

describe('method, authority and framing: Node refuses or trajgate re-serialises', () => {
  it.each(FRAMING_REFUSED)('%s → 400, one refusal', async (_name, bytes, reason) => {
    const { res, record, forwarded } = await send(bytes(upstream.port));
    expect(res.status).toBe(400);
    expect(record).toMatchObject({ type: 'refusal', status: 400 });
    expect((record as RefusalRecord).reason).toMatch(reason);
    expect(forwarded).toEqual([]);
  });

  it.each(HOST_REWRITES)(
    '%s: the upstream gets Host = the judged authority',
    async (_name, bytes) => {
      const { res, forwarded } = await send(bytes(upstream.port));
      expect(res.status).toBe(200);
      expect(forwarded.map((r) => [r.url, r.headers.host])).toEqual([
        ['/v1/x', `127.0.0.1:${upstream.port}`],
      ]);
    },
  );

  it('chunked with odd whitespace and an extension is decoded, re-framed, forwarded once', async () => {
    const { res, forwarded } = await send(oddChunked(upstream.port));
    expect(res.status).toBe(200);
    expect(forwarded.map((r) => [r.url, r.body])).toEqual([['/upload', 'hi']]);
  });
});

describe('after all of that', () => {
  it('the upstream never received a request outside the allowed prefixes', () => {
    expect(upstream.seen.length).toBeGreaterThan(0);
    for (const r of upstream.seen) expect(r.url).toMatch(/^\/(v1\/[^?#]*|upload)$/);
    expect(upstream.seen.map((r) => r.url)).not.toContain('/admin');
  });
});
