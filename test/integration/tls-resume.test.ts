import type { SecureVersion, TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import type { Handshake } from '../helpers/tls.js';
import {
  handshakeThrough,
  interceptPerTest,
  makeLocalCa,
  refusals,
  requestOn,
} from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * TLS session resumption on intercepted tunnels, with real clients (node:tls given `session`,
 * curl fetching twice in one run): an agent that reconnects to the same CONNECT host resumes
 * its session (TLS 1.3 and TLS 1.2 tickets), and its requests are judged and journaled as on a
 * full handshake. A session never lets a handshake skip the SNI rule: a ticket from host A
 * resumes nothing on a tunnel to host B, and a resumed session naming another server than the
 * CONNECT host is refused as a full handshake is.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const A = `localhost:${up.port}`;
const B = `b.localhost:${up.port}`;
const UP = `127.0.0.1:${up.port}`;
/** Resolves every name to 127.0.0.1 (no resolver is asked). */
const lookup = async () => ['127.0.0.1'];

const start = interceptPerTest({
  ca,
  intercept: [A, B, UP],
  allow: [`GET https://${A}/`, `GET https://${UP}/`],
  ports: [up.port],
  policy: { pause: 'block' },
  lookup,
});

const GET = (host: string, path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');

/**
 * The session a client was given on `socket`: TLS 1.2's comes with the handshake, a TLS 1.3
 * ticket after it.
 */
function sessionOf(socket: TLSSocket): Promise<Buffer> {
  const now = socket.getProtocol() === 'TLSv1.3' ? undefined : socket.getSession();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise((resolve) => socket.once('session', resolve));
}

function connected(hs: Handshake): TLSSocket {
  if (!hs.ok) throw new Error(`handshake failed: ${hs.error}`);
  return hs.socket;
}

/** A full handshake to `authority` and a GET on it; the session it gave the client. */
async function firstVisit(g: TestGateway, authority: string, maxVersion: SecureVersion) {
  const socket = connected(
    await handshakeThrough(g.gw.proxy.port, authority, { ca: ca.pem, maxVersion }),
  );
  expect(socket.isSessionReused()).toBe(false);
  const session = sessionOf(socket);
  const res = await requestOn(socket, GET(authority, '/first'));
  expect(res.status).toBe(200);
  return session;
}

describe.each(['TLSv1.3', 'TLSv1.2'] as const)('%s', (maxVersion) => {
  it('an agent reconnecting with its session resumes it; both requests are judged and journaled', async () => {
    const g = await start();
    const seen = up.seen.length;
    const session = await firstVisit(g, A, maxVersion);
    const again = connected(
      await handshakeThrough(g.gw.proxy.port, A, { ca: ca.pem, maxVersion, session }),
    );
    expect(again.isSessionReused()).toBe(true);
    expect(again.getProtocol()).toBe(maxVersion);
    const res = await requestOn(again, GET(A, '/second'));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text.slice(res.text.indexOf('{')))).toMatchObject({ url: '/second' });
    expect(up.seen.slice(seen).map((r) => r.url)).toEqual(['/first', '/second']);
    await waitForRecords(g, (r) => r.type === 'outcome', 2);
    expect(events(g).map((e) => [e.target, e.verdict])).toEqual([
      [`https://${A}/first`, 'ALLOW'],
      [`https://${A}/second`, 'ALLOW'],
    ]);
    expect(outcomes(g).map((o) => o.status)).toEqual([200, 200]);
    expect(refusals(g.records())).toEqual([]);
  });

  it("a ticket from host A resumes nothing on a tunnel to host B: a full handshake, B's leaf", async () => {
    const g = await start();
    const session = await firstVisit(g, A, maxVersion);
    const hs = await handshakeThrough(g.gw.proxy.port, B, { ca: ca.pem, maxVersion, session });
    const socket = connected(hs);
    expect(socket.isSessionReused()).toBe(false);
    expect(hs.ok && hs.cert.subjectaltname).toBe('DNS:b.localhost');
    socket.destroy();
  });

  const mismatches = [
    { name: "A's ticket on a tunnel to A naming B", connect: A, servername: 'b.localhost' },
    { name: "A's ticket on a tunnel to B naming A", connect: B, servername: 'localhost' },
  ];

  it.each(mismatches)('$name: refused as a full handshake is, journaled', async (row) => {
    const g = await start();
    const session = await firstVisit(g, A, maxVersion);
    const seen = up.seen.length;
    const hs = await handshakeThrough(g.gw.proxy.port, row.connect, {
      ca: ca.pem,
      maxVersion,
      session,
      servername: row.servername,
      checkServerIdentity: () => undefined,
    });
    if (hs.ok) hs.socket.destroy();
    expect(hs.ok).toBe(false);
    await waitFor(() => refusals(g.records()).length === 1);
    const host = row.connect.replace(/:\d+$/, '');
    expect(refusals(g.records())[0]).toMatchObject({
      target: row.connect,
      reason: `TLS handshake with the agent failed: SNI "${row.servername}" does not match the CONNECT host ${host}`,
    });
    expect(up.seen.length).toBe(seen);
  });

  it('a hello only OpenSSL reads (an address as SNI) is served, but never resumed', async () => {
    const g = await start();
    const tls = { ca: ca.pem, maxVersion, servername: '127.0.0.1' };
    const first = connected(await handshakeThrough(g.gw.proxy.port, UP, tls));
    const session = sessionOf(first);
    expect((await requestOn(first, GET(UP, '/first'))).status).toBe(200);
    const again = connected(
      await handshakeThrough(g.gw.proxy.port, UP, { ...tls, session: await session }),
    );
    expect(again.isSessionReused()).toBe(false);
    expect((await requestOn(again, GET(UP, '/second'))).status).toBe(200);
    expect(refusals(g.records())).toEqual([]);
  });
});

it('curl fetching twice in one run resumes its session on the second tunnel', async () => {
  const g = await start();
  const seen = up.seen.length;
  // `Connection: close` ends the first tunnel: the second URL needs a new CONNECT and handshake.
  const res = await curl([
    '-v',
    '--cacert',
    ca.certPath,
    '-x',
    g.proxyUrl,
    '--http1.1',
    '-H',
    'Connection: close',
    `https://${A}/one`,
    `https://${A}/two`,
  ]);
  expect(res.exitCode).toBe(0);
  expect(up.seen.slice(seen).map((r) => r.url)).toEqual(['/one', '/two']);
  expect(res.stderr.match(/^> CONNECT /gm)).toHaveLength(2);
  // A resumed TLS 1.3 handshake sends no Certificate: only the first tunnel got one.
  expect(res.stderr.match(/\(IN\), TLS handshake, Certificate \(11\)/g)).toHaveLength(1);
  await waitForRecords(g, (r) => r.type === 'outcome', 2);
  expect(events(g).map((e) => e.target)).toEqual([`https://${A}/one`, `https://${A}/two`]);
  expect(outcomes(g).map((o) => o.status)).toEqual([200, 200]);
});
