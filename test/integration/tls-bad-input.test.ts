import { randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { connectTunnel, roundTrip } from '../helpers/raw.js';
import {
  captureClientHello,
  fixture,
  handshakeThrough,
  interceptPerTest,
  makeLocalCa,
  refusals,
  requestOn,
  startTlsServer,
} from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Bad input to TLS interception, all on loopback: bytes that are not TLS, missing or odd SNI,
 * clients that stall, upstreams with broken certificates, many hosts. Each is refused with a
 * reason and journaled, and the gateway keeps serving.
 */
const ca = makeLocalCa();
const up = await startUpstream({ tls: true });
const expired = await startTlsServer('expired.pem', 'bad-key.pem');
const wrongName = await startTlsServer('wrong-name.pem', 'bad-key.pem');
const UP = `127.0.0.1:${up.port}`;
const ORIGIN = `https://${UP}`;
const CA_PEM = ca.pem;
const HOSTS = Array.from({ length: 20 }, (_, i) => `127.0.0.${i + 2}`);
/** Resolves every name to 127.0.0.1 (no resolver is asked). */
const lookup = async () => ['127.0.0.1'];

const start = interceptPerTest({
  ca,
  intercept: [
    UP,
    `localhost:${up.port}`,
    `[::1]:${up.port}`,
    `127.0.0.1:${expired.port}`,
    `127.0.0.1:${wrongName.port}`,
    ...HOSTS.map((h) => `${h}:443`),
  ],
  allow: [
    `GET ${ORIGIN}/`,
    `GET https://localhost:${up.port}/`,
    `GET https://127.0.0.1:${expired.port}/`,
    `GET https://127.0.0.1:${wrongName.port}/`,
  ],
  ports: [up.port, expired.port, wrongName.port],
  policy: { pause: 'block' },
  lookup,
});

const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');

/** A full intercepted GET still works (the gateway survived whatever came before). */
async function stillServes(g: TestGateway): Promise<void> {
  const res = await curl(['--cacert', ca.certPath, '-x', g.proxyUrl, `${ORIGIN}/still`]);
  expect(res.status).toBe(200);
}

const GET = (host: string, path = '/get') =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

const hello = await captureClientHello('127.0.0.1');

/** An SSLv2-format ClientHello (2-byte header, high bit set) offering TLS 1.0: complete. */
function sslv2Hello(): Buffer {
  const ciphers = Buffer.from('00002f000035000005', 'hex');
  const challenge = randomBytes(16);
  const body = Buffer.concat([
    Buffer.from([0x01, 0x03, 0x01, 0x00, ciphers.length, 0x00, 0x00, 0x00, challenge.length]),
    ciphers,
    challenge,
  ]);
  return Buffer.concat([Buffer.from([0x80, body.length]), body]);
}

describe('not a ClientHello after CONNECT', () => {
  const corrupted = Buffer.from(hello);
  corrupted.fill(0xff, 9, 60); // version, random, session id, cipher suites: nonsense
  const rows = [
    { name: 'a plain HTTP request', bytes: Buffer.from(GET(UP)), why: /http request/i },
    {
      name: 'random bytes',
      bytes: Buffer.concat([Buffer.from([0x42]), randomBytes(63)]),
      why: /wrong version number|unknown protocol|unexpected message|record/i,
    },
    {
      name: 'a TLS record header claiming 64 KiB',
      bytes: Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff]), randomBytes(100)]),
      why: /length too long|record overflow|record/i,
    },
    {
      name: 'a ClientHello with a corrupted body',
      bytes: corrupted,
      why: /\w/,
    },
    { name: 'an SSLv2-style hello', bytes: sslv2Hello(), why: /\w/ },
  ];

  it.each(rows)('$name → closed at once, refused with a reason, journaled', async (row) => {
    const g = await start({ limits: { headerTimeout: '5s' } });
    const seen = up.seen.length;
    const t = await connectTunnel(g.gw.proxy.port, UP);
    expect(t.status).toBe(200);
    const started = Date.now();
    t.socket.write(row.bytes);
    const r = await roundTrip(t.socket, '', () => false, 4_000);
    expect(r.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000); // not the 5 s handshake limit
    await waitFor(() => refusals(g.records()).length === 1);
    const [refusal] = refusals(g.records());
    expect(refusal).toMatchObject({ session: '127.0.0.1', target: UP });
    expect(refusal?.reason).toMatch(/^TLS handshake with the agent failed: /);
    expect(refusal?.reason).toMatch(row.why);
    expect(events(g)).toEqual([]);
    expect(up.seen.length).toBe(seen);
    await stillServes(g);
  });

  // Reasons are one line, not OpenSSL's multi-line messages with source paths.
  it('the reason is one line (no OpenSSL source paths or trailing newline)', async () => {
    const g = await start();
    const t = await connectTunnel(g.gw.proxy.port, UP);
    await roundTrip(t.socket, GET(UP), () => false, 4_000);
    await waitFor(() => refusals(g.records()).length === 1);
    const reason = refusals(g.records())[0]?.reason ?? '';
    expect(reason).not.toMatch(/\n/);
    expect(reason).not.toMatch(/deps\/openssl|\.c:\d+/);
  });
});

describe('SNI', () => {
  const rows = [
    {
      name: 'no SNI (servername "") to an IP host',
      connect: UP,
      servername: '',
      san: 'IP Address:127.0.0.1',
    },
    {
      name: 'no SNI (Node sends none for an IP)',
      connect: UP,
      servername: undefined,
      san: 'IP Address:127.0.0.1',
    },
    {
      name: 'no SNI to a DNS host',
      connect: `localhost:${up.port}`,
      servername: '',
      san: 'DNS:localhost',
    },
    {
      name: 'an IP SNI equal to the CONNECT host',
      connect: UP,
      servername: '127.0.0.1',
      san: 'IP Address:127.0.0.1',
    },
    {
      name: 'SNI in another case',
      connect: `localhost:${up.port}`,
      servername: 'LOCALHOST',
      san: 'DNS:localhost',
    },
    {
      name: 'no SNI to an IPv6 host',
      connect: `[::1]:${up.port}`,
      servername: '',
      san: 'IP Address:0:0:0:0:0:0:0:1',
    },
  ] as const;

  it.each(rows)('$name: the leaf is for the CONNECT host and requests work', async (row) => {
    const g = await start();
    const hs = await handshakeThrough(g.gw.proxy.port, row.connect, {
      ca: CA_PEM,
      ...(row.servername === undefined ? {} : { servername: row.servername }),
      // The name checked is the CONNECT host (servername '' would make Node check 'localhost').
      checkServerIdentity: () => undefined,
    });
    expect(hs.ok, hs.ok ? '' : hs.error).toBe(true);
    if (!hs.ok) return;
    expect(hs.cert.subjectaltname).toBe(row.san);
    if (row.connect.startsWith('[')) {
      hs.socket.end(); // nothing listens upstream on ::1
    } else {
      const res = await requestOn(hs.socket, GET(row.connect));
      expect(res.status).toBe(200);
    }
    expect(refusals(g.records())).toEqual([]);
  });

  const mismatches = [
    { name: 'an IP SNI other than the CONNECT IP', connect: UP, servername: '127.0.0.2' },
    { name: 'a DNS SNI on an IP CONNECT', connect: UP, servername: 'localhost' },
    { name: 'another DNS name', connect: `localhost:${up.port}`, servername: 'evil.example' },
    {
      name: 'a subdomain of the CONNECT host',
      connect: `localhost:${up.port}`,
      servername: 'a.localhost',
    },
  ];

  it.each(mismatches)('$name: handshake refused, journaled, nothing sent', async (row) => {
    const g = await start();
    const seen = up.seen.length;
    const hs = await handshakeThrough(g.gw.proxy.port, row.connect, {
      ca: CA_PEM,
      servername: row.servername,
    });
    expect(hs.ok).toBe(false);
    await waitFor(() => refusals(g.records()).length === 1);
    const host = row.connect.replace(/:\d+$/, '');
    expect(refusals(g.records())[0]).toMatchObject({
      target: row.connect,
      reason: `TLS handshake with the agent failed: SNI "${row.servername}" does not match the CONNECT host ${host}`,
    });
    expect(up.seen.length).toBe(seen);
    await stillServes(g);
  });
});

describe('Host inside the tunnel', () => {
  const rows = [
    { name: 'another name', head: GET('other.example'), status: 421 },
    { name: 'the host without its port (means 443)', head: GET('127.0.0.1'), status: 421 },
    { name: 'another port', head: GET('127.0.0.1:1'), status: 421 },
    {
      name: 'a second Host, the first naming another host',
      head: `GET /get HTTP/1.1\r\nHost: other.example\r\nHost: ${UP}\r\nConnection: close\r\n\r\n`,
      status: 400,
    },
    {
      name: 'absolute-form to another origin',
      head: `GET https://other.example/get HTTP/1.1\r\nHost: ${UP}\r\nConnection: close\r\n\r\n`,
      status: 421,
    },
    {
      name: 'absolute-form http:// to the same host',
      head: `GET http://${UP}/get HTTP/1.1\r\nHost: ${UP}\r\nConnection: close\r\n\r\n`,
      status: 421,
    },
  ];

  it.each(rows)('$name → $status, journaled, nothing sent', async (row) => {
    const g = await start();
    const seen = up.seen.length;
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: CA_PEM });
    expect(hs.ok).toBe(true);
    if (!hs.ok) return;
    const res = await requestOn(hs.socket, row.head);
    expect(res.status, JSON.stringify(up.seen.slice(seen))).toBe(row.status);
    expect(up.seen.length).toBe(seen);
    expect(refusals(g.records())).toEqual([expect.objectContaining({ status: row.status })]);
  });

  // A request without Host is refused by trajgate (with a reason, journaled), not by Node's parser.
  it('no Host at all (HTTP/1.1) → refused with a reason, journaled, nothing sent', async () => {
    const g = await start();
    const seen = up.seen.length;
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: CA_PEM });
    expect(hs.ok).toBe(true);
    if (!hs.ok) return;
    const res = await requestOn(hs.socket, 'GET /get HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(up.seen.length).toBe(seen);
    expect([400, 421]).toContain(res.status);
    expect(res.text).toMatch(/\r\n\r\ntrajgate: .*Host/);
    expect(refusals(g.records())).toEqual([expect.objectContaining({ status: res.status })]);
  });

  // RFC 9112 § 3.2: more than one Host field line is answered 400.
  it('two Host fields (the first the tunnel’s) → 400, journaled, nothing sent', async () => {
    const g = await start();
    const seen = up.seen.length;
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: CA_PEM });
    expect(hs.ok).toBe(true);
    if (!hs.ok) return;
    const head = `GET /get HTTP/1.1\r\nHost: ${UP}\r\nHost: other.example\r\nConnection: close\r\n\r\n`;
    const res = await requestOn(hs.socket, head);
    expect(up.seen.length).toBe(seen);
    expect(res.status).toBe(400);
    expect(refusals(g.records())).toEqual([expect.objectContaining({ status: 400 })]);
  });

  it('absolute-form to the same origin, and a Host in another case or with a trailing dot, are fine', async () => {
    const g = await start();
    for (const head of [
      `GET ${ORIGIN}/abs HTTP/1.1\r\nHost: ${UP}\r\nConnection: close\r\n\r\n`,
      GET(`LOCALHOST:${up.port}`),
      GET(`localhost.:${up.port}`),
    ]) {
      const connect =
        head.includes('LOCALHOST') || head.includes('localhost.') ? `localhost:${up.port}` : UP;
      const hs = await handshakeThrough(g.gw.proxy.port, connect, {
        ca: CA_PEM,
        checkServerIdentity: () => undefined,
      });
      expect(hs.ok).toBe(true);
      if (!hs.ok) return;
      expect((await requestOn(hs.socket, head)).status, head).toBe(200);
    }
  });
});

describe('clients that stall (limits.headerTimeout 1s)', () => {
  const rows = [
    { name: 'nothing after the CONNECT', send: async () => Buffer.alloc(0) },
    {
      name: 'half a ClientHello',
      send: async () => hello.subarray(0, Math.floor(hello.length / 2)),
    },
    {
      name: 'a whole ClientHello, then silence',
      send: async () => hello,
    },
  ];

  it.each(rows)('$name → closed after the limit, journaled', async (row) => {
    const g = await start({ limits: { headerTimeout: '1s' } });
    const bytes = await row.send();
    const t = await connectTunnel(g.gw.proxy.port, UP);
    expect(t.status).toBe(200);
    const started = Date.now();
    if (bytes.length > 0) t.socket.write(bytes);
    const r = await roundTrip(t.socket, '', () => false, 5_000);
    const ms = Date.now() - started;
    expect(r.closed).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(3_000);
    await waitFor(() => refusals(g.records()).length === 1);
    expect(refusals(g.records())[0]).toMatchObject({
      target: UP,
      reason: 'TLS handshake not completed within 1000 ms',
    });
    await stillServes(g);
  });

  // The proxy's sockets are half-open capable: an agent leaving mid-handshake must still be seen.
  it('an agent that closes mid-handshake frees its tunnel at once and is journaled as such', async () => {
    const g = await start({ limits: { headerTimeout: '5s', tunnelsPerSession: 1 } });
    const t = await connectTunnel(g.gw.proxy.port, UP);
    expect(t.status).toBe(200);
    // Part of a ClientHello, handed to the kernel before the close: the FIN follows it.
    await new Promise((r) => t.socket.write(hello.subarray(0, 40), r));
    t.socket.destroy();
    await waitFor(() => refusals(g.records()).length === 1);
    expect(refusals(g.records())[0]?.reason).not.toMatch(/not completed within/);
    const next = await connectTunnel(g.gw.proxy.port, UP);
    next.socket.destroy();
    expect(next.status).toBe(200); // not 429: the first tunnel is gone
  });

  // limits.headerTimeout applies inside the tunnel too (the inner server does not listen, so
  // trajgate keeps the deadlines itself).
  const after = [
    { name: 'half a request head', head: `GET /get HTTP/1.1\r\nHost: ${UP}\r\nX-Slow: ` },
    { name: 'nothing at all', head: '' },
  ];

  it.each(after)('after the handshake, $name → closed after the limit, journaled', async (row) => {
    const g = await start({ limits: { headerTimeout: '1s' } });
    const hs = await handshakeThrough(g.gw.proxy.port, UP, { ca: CA_PEM });
    expect(hs.ok).toBe(true);
    if (!hs.ok) return;
    const started = Date.now();
    const res = await requestOn(hs.socket, row.head, 10_000);
    expect(res.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(6_000);
    if (row.head !== '') expect(res.status).toBe(408);
    await waitFor(() => refusals(g.records()).length === 1);
  });
});

describe('upstream certificates that do not verify', () => {
  const rows = [
    {
      name: 'expired',
      port: () => expired.port,
      code: 'CERT_HAS_EXPIRED',
      upstreamCa: true,
      server: () => expired,
    },
    {
      name: 'for another name',
      port: () => wrongName.port,
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      upstreamCa: true,
      server: () => wrongName,
    },
    {
      name: 'from a CA the gateway does not trust (no tls.upstreamCa)',
      port: () => up.port,
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      upstreamCa: false,
      server: () => ({ requests: up.seen.length }),
    },
  ];

  it.each(rows)('$name → 502 naming the problem ($code), journaled', async (row) => {
    const gw = await start({ upstreamCa: row.upstreamCa });
    const before = row.server().requests;
    const origin = `https://127.0.0.1:${row.port()}`;
    const res = await curl(['--cacert', ca.certPath, '-x', gw.proxyUrl, `${origin}/x`]);
    expect(res.status).toBe(502);
    // An untrusted issuer is fixed by configuration, and the reason says which.
    const reason = row.upstreamCa
      ? `upstream 127.0.0.1:${row.port()} presented a certificate that does not verify (${row.code})`
      : `upstream 127.0.0.1:${row.port()} certificate not trusted (${row.code}): add its CA to tls.upstreamCa or NODE_EXTRA_CA_CERTS`;
    expect(res.body).toBe(`trajgate: ${reason}\n`);
    expect(row.server().requests).toBe(before);
    await waitFor(() => outcomes(gw).length === 1);
    expect(events(gw)[0]).toMatchObject({ target: `${origin}/x`, verdict: 'ALLOW' });
    expect(outcomes(gw)[0]).toMatchObject({ status: 502, error: reason });
  });

  it('the test fixtures are what they claim (openssl would say the same)', () => {
    const testCa = new X509Certificate(readFileSync(fixture('ca.pem')));
    const old = new X509Certificate(readFileSync(fixture('expired.pem')));
    const wrong = new X509Certificate(readFileSync(fixture('wrong-name.pem')));
    expect(old.verify(testCa.publicKey) && wrong.verify(testCa.publicKey)).toBe(true);
    expect(Date.parse(old.validTo)).toBeLessThan(Date.now());
    expect(old.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(wrong.checkIP('127.0.0.1')).toBeUndefined();
    expect(wrong.checkHost('localhost')).toBeUndefined();
  });
});

describe('many hosts', () => {
  it('20 distinct intercepted hosts each get their own leaf; the gateway keeps serving', async () => {
    const g = await start();
    for (const host of HOSTS) {
      const hs = await handshakeThrough(g.gw.proxy.port, `${host}:443`, { ca: CA_PEM });
      expect(hs.ok, host).toBe(true);
      if (!hs.ok) continue;
      expect(hs.cert.subjectaltname).toBe(`IP Address:${host}`);
      hs.socket.end();
    }
    expect(refusals(g.records())).toEqual([]);
    await stillServes(g);
  });
});
