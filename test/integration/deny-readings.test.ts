import { afterAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, exchange, parseHead, roundTrip } from '../helpers/raw.js';
import { fixture, handshakeThrough, makeLocalCa, requestOn } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * `network.deny: ["http://127.0.0.1:PORT/admin/"]` refuses every spelling of
 * the path an upstream may read as `/admin/…` — as plain absolute-form HTTP, as plain HTTP
 * inside a CONNECT, and inside intercepted TLS: 403 with the verdict header, one event record
 * naming the deny, and nothing reaching the upstream; paths that only share letters with it
 * (`/administrator`) and permitted paths go out.
 */
const ca = makeLocalCa();
const up = await startUpstream();
const tup = await startUpstream({ tls: true });
const UP = `127.0.0.1:${up.port}`;
const TUP = `127.0.0.1:${tup.port}`;
const DENY = `http://${UP}/admin/`;
const TDENY = `https://${TUP}/admin/`;
const g = await startTestGateway({
  tls: { intercept: [TUP], ca: ca.dir, upstreamCa: [fixture('ca.pem')] },
  network: {
    allow: [UP, TUP],
    deny: [DENY, TDENY],
    allowPrivate: ['127.0.0.0/8'],
    ports: [443, up.port, tup.port],
  },
  // Refusals count as crossings: a high pauseAt keeps every answer the deny's own.
  policy: {
    pause: 'block',
    boundaries: {
      network: { kinds: ['network'], unless: 'approved', reviewAt: 1, pauseAt: 10_000 },
    },
  },
});
afterAll(() => g.stop());

/** Every one an upstream may serve as `/admin/…` (`%61` is `a`, RFC 3986 § 6.2.2.2). */
const SPELLINGS = [
  '/admin/',
  '/admin',
  '/ADMIN/',
  '/Admin/users',
  '/%61dmin/',
  '/%61%64%6D%69%6E/x',
  '/admin;x/',
  '/admin;jsessionid=1/users',
  '/;x/admin/',
  '//admin/',
  '///admin/x',
  '/./admin/',
  '/x/../admin/',
  '/%2e/admin/',
  '/admin%2f',
  '/admin%2Fusers',
  '/%2fadmin/',
  '/admin%5cusers',
  '/\\admin\\x',
  '/%2561dmin/',
  '/%252561dmin/',
  '/admin./',
  '/admin%20/',
  '/admin%3bx/',
  '/admin%3fq=1',
  '/%u0061dmin/',
  '/%EF%BD%81dmin/',
  '/%41DMIN;x//users',
];
/** Not under `/admin/` in any reading: forwarded. */
const PERMITTED = ['/administrator', '/adminx', '/admin-x/', '/public/admin/', '/'];

const events = () => g.records().filter((r): r is EventRecord => r.type === 'event');
const request = (target: string, host: string) =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

/**
 * Sends one request by `send` and checks the refusal: 403 with the verdict header and the deny
 * in the body, exactly one new event record (denied by the pattern), the upstream untouched.
 */
async function refused(
  deny: string,
  upstream: typeof up,
  send: () => Promise<{ status: number; headers: Record<string, string>; body: string }>,
) {
  const before = events().length;
  const seen = upstream.seen.length;
  const res = await send();
  expect(res.status).toBe(403);
  expect(res.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
  expect(res.body).toContain(`network.deny: ${deny}`);
  const added = events().slice(before);
  const judged = added.filter((e) => e.target.includes('/'));
  expect(judged).toHaveLength(1);
  expect(judged[0]).toMatchObject({ verdict: 'REVIEW', method: 'GET' });
  expect(judged[0]?.denied).toMatch(
    new RegExp(`^network\\.deny: ${deny.replace(/[./]/g, '\\$&')}`),
  );
  expect(upstream.seen.length).toBe(seen);
}

describe('a deny naming a path refuses every reading of it', () => {
  it.each(SPELLINGS)('plain absolute-form: %s', async (path) => {
    await refused(DENY, up, () => exchange(g.gw.proxy.port, request(`http://${UP}${path}`, UP)));
  });

  it.each(SPELLINGS)('plain HTTP inside a CONNECT: %s', async (path) => {
    await refused(DENY, up, async () => {
      const t = await connectTunnel(g.gw.proxy.port, UP);
      expect(t.status).toBe(200);
      const { got } = await roundTrip(t.socket, request(path, UP), () => false);
      t.socket.destroy();
      return parseHead(got);
    });
  });

  it.each(SPELLINGS)('intercepted TLS: %s', async (path) => {
    await refused(TDENY, tup, async () => {
      const hs = await handshakeThrough(g.gw.proxy.port, TUP, { ca: ca.pem });
      if (!hs.ok) throw new Error(hs.error);
      return parseHead((await requestOn(hs.socket, request(path, TUP))).text);
    });
  });

  it('curl --path-as-is spellings are refused the same way', async () => {
    for (const path of ['/./admin/', '/x/../admin/', '//admin/', '/%61dmin/', '/ADMIN;x/']) {
      await refused(DENY, up, () =>
        curl(['--path-as-is', '-x', g.proxyUrl, `http://${UP}${path}`]),
      );
    }
  });

  it.each(PERMITTED)('%s is not under /admin/ and goes out as sent', async (path) => {
    const res = await exchange(g.gw.proxy.port, request(`http://${UP}${path}`, UP));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ method: 'GET', url: path });
    expect(events().at(-1)).toMatchObject({ verdict: 'ALLOW', target: `http://${UP}${path}` });
    expect(events().at(-1)?.denied).toBeUndefined();
  });

  it('the reason says how the path was read', async () => {
    const res = await exchange(g.gw.proxy.port, request(`http://${UP}/%61dmin;x/`, UP));
    expect(res.status).toBe(403);
    expect(events().at(-1)?.denied).toBe(
      `network.deny: ${DENY} (the path "/%61dmin;x/" is "/admin/" when read with unreserved characters decoded, with ";" parameters dropped, as servers may)`,
    );
    expect(res.body).toContain('"/%61dmin;x/" is "/admin/" when read');
  });
});
