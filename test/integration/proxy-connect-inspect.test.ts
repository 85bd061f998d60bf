import { connect as tlsConnect } from 'node:tls';
import { EnvHttpProxyAgent, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import type { EventRecord, RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, openRaw, roundTrip } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * CONNECT takes host:port only (RFC 9110 § 9.3.6), and a tunnel to a host that only method or
 * path patterns allow is read and judged request by request, never relayed blind. Loopback only.
 */
const up = await startUpstream();
const UP = `127.0.0.1:${up.port}`;

const { start, keep } = gatewayPerTest({
  network: { allow: [`GET http://${UP}/allowed`], allowPrivate: ['127.0.0.1/32'] },
});

const refusals = (g: TestGateway) =>
  g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');

describe('CONNECT request targets', () => {
  const rows = [
    { name: 'an absolute URL', target: `http://${UP}/allowed` },
    { name: 'an https URL', target: `https://${UP}/` },
    { name: 'a path after the port', target: `${UP}/allowed` },
    { name: 'no port', target: '127.0.0.1' },
    { name: 'userinfo', target: `agent@${UP}` },
    { name: 'an origin-form path', target: '/allowed' },
    { name: 'a query', target: `${UP}?x=1` },
    { name: 'an unclosed IPv6 bracket', target: `[::1:${up.port}` },
  ];
  it.each(rows)('$name → 400, one refusal record, nothing opened', async ({ target }) => {
    const g = await start({
      network: { allow: [UP, `${UP}/allowed`], allowPrivate: ['127.0.0.1/32'] },
    });
    const before = up.connections;
    const t = keep(
      await openRaw(g.gw.proxy.port, `CONNECT ${target} HTTP/1.1\r\nHost: ${UP}\r\n\r\n`),
    );
    expect(t.status).toBe(400);
    await waitFor(() => refusals(g).length === 1);
    expect(refusals(g)[0]?.reason).toMatch(/^CONNECT takes an authority, host:port/);
    expect(events(g)).toEqual([]);
    expect(up.connections).toBe(before);
  });

  it.each([
    {
      name: 'an SSH banner',
      bytes: 'SSH-2.0-OpenSSH_9.2\r\n',
      why: /^malformed request inside a CONNECT tunnel/,
    },
    { name: 'binary bytes', bytes: '\x00\x01\x02hello', why: /neither HTTP\/1\.x nor TLS/ },
  ])(
    'a path or method pattern never approves a blind tunnel: $name is read and refused',
    async ({ bytes, why }) => {
      const g = await start({
        network: { allow: [`${UP}/allowed`, `POST ${UP}`], allowPrivate: ['127.0.0.1/32'] },
      });
      const before = up.connections;
      const t = keep(await connectTunnel(g.gw.proxy.port, UP));
      expect(t.status).toBe(200);
      const r = await roundTrip(t.socket, bytes, () => false, 3_000);
      expect(r.closed).toBe(true);
      await waitFor(() => refusals(g).length === 1);
      expect(refusals(g)[0]).toMatchObject({ status: 400, target: UP });
      expect(refusals(g)[0]?.reason).toMatch(why);
      expect(up.connections).toBe(before);
    },
  );
});

describe('plain HTTP inside a CONNECT is judged per request', () => {
  it("undici's EnvHttpProxyAgent: /allowed → 200, /other → 403, each journaled", async () => {
    const g = await start();
    const dispatcher = new EnvHttpProxyAgent({ httpProxy: g.proxyUrl, noProxy: '' });
    try {
      const ok = await fetch(`http://${UP}/allowed`, { dispatcher });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { url: string }).url).toBe('/allowed');
      const refused = await fetch(`http://${UP}/other`, { dispatcher });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('x-trajgate-verdict')).toBe('REVIEW; boundary=network');
      expect(await refused.text()).toMatch(/trajgate refused this request: GET http:\/\/127/);
    } finally {
      await dispatcher.close();
    }
    expect(up.seen.filter((s) => s.url === '/other')).toEqual([]);
    const judged = events(g).map((e) => [e.method, e.target, e.verdict]);
    expect(judged).toEqual([
      ['GET', `http://${UP}/allowed`, 'ALLOW'],
      ['GET', `http://${UP}/other`, 'REVIEW'],
    ]);
  });

  it('pipelined requests in one tunnel are each judged; a POST is not covered by GET', async () => {
    const g = await start();
    const t = keep(await connectTunnel(g.gw.proxy.port, UP));
    expect(t.status).toBe(200);
    const req = (method: string, path: string, extra = '') =>
      `${method} ${path} HTTP/1.1\r\nHost: ${UP}\r\n${extra}\r\n`;
    const r = await roundTrip(
      t.socket,
      req('GET', '/allowed') +
        req('POST', '/allowed', 'Content-Length: 2\r\n') +
        'hi' +
        req('GET', '/allowed'),
      (got) => (got.match(/HTTP\/1\.1 \d{3} /g) ?? []).length === 3,
    );
    const statuses = (r.got.match(/HTTP\/1\.1 \d{3} /g) ?? []).map((l) => l.slice(9, 12));
    expect(statuses).toEqual(['200', '403', '200']);
    expect(up.seen.some((s) => s.method === 'POST')).toBe(false);
  });

  it('a Host other than the tunnel → 421, journaled, nothing sent', async () => {
    const g = await start();
    const t = keep(await connectTunnel(g.gw.proxy.port, UP));
    const before = up.seen.length;
    const r = await roundTrip(
      t.socket,
      `GET /allowed HTTP/1.1\r\nHost: 127.0.0.2:${up.port}\r\n\r\n`,
      (got) => got.includes('\r\n\r\n'),
    );
    expect(r.got).toMatch(/^HTTP\/1\.1 421 /);
    await waitFor(() => refusals(g).length === 1);
    expect(refusals(g)[0]?.status).toBe(421);
    expect(up.seen.length).toBe(before);
  });

  it('a CONNECT inside the tunnel → 405, journaled, nothing opened', async () => {
    const g = await start();
    const t = keep(await connectTunnel(g.gw.proxy.port, UP));
    const before = up.connections;
    const r = await roundTrip(t.socket, `CONNECT ${UP} HTTP/1.1\r\nHost: ${UP}\r\n\r\n`);
    expect(r.got).toMatch(/^HTTP\/1\.1 405 /);
    expect(r.closed).toBe(true);
    await waitFor(() => refusals(g).length === 1);
    expect(refusals(g)[0]).toMatchObject({ status: 405, target: UP });
    expect(up.connections).toBe(before);
  });

  it('an absolute-form request naming another host inside the tunnel → 421', async () => {
    const g = await start();
    const t = keep(await connectTunnel(g.gw.proxy.port, UP));
    const r = await roundTrip(
      t.socket,
      `GET http://127.0.0.2:${up.port}/allowed HTTP/1.1\r\nHost: ${UP}\r\n\r\n`,
      (got) => got.includes('\r\n\r\n'),
    );
    expect(r.got).toMatch(/^HTTP\/1\.1 421 /);
  });

  it('TLS through a tunnel only plain-HTTP patterns allow (not intercepted) → closed, journaled', async () => {
    const g = await start();
    const t = keep(await connectTunnel(g.gw.proxy.port, UP));
    expect(t.status).toBe(200);
    const tls = tlsConnect({
      socket: t.socket,
      servername: 'localhost',
      rejectUnauthorized: false,
    });
    const err = await new Promise<Error>((resolve) => tls.once('error', resolve));
    expect(err.message).toMatch(/socket disconnected|ECONNRESET|EPIPE/i);
    await waitFor(() => refusals(g).length === 1);
    expect(refusals(g)[0]).toMatchObject({ status: 403, target: UP });
    expect(refusals(g)[0]?.reason).toMatch(/^TLS to .* cannot be judged/);
  });
});
