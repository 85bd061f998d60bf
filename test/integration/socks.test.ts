import { createServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type {
  EventRecord,
  JournalRecord,
  OutcomeRecord,
  RefusalRecord,
} from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { startHeldEcho } from '../helpers/flows.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { SOCKS_LISTEN, socksAt, socksRaw, socksTunnel } from '../helpers/socks.js';
import { interceptConfig, makeLocalCa, startTlsServer } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * The SOCKS5 listener with real clients on loopback: curl's `--socks5-hostname`, OpenSSH
 * through a ProxyCommand. Every tunnel is judged as `CONNECT host:port` is on the proxy.
 */
const upstream = await startUpstream();
const echo = await startHeldEcho();
const UPSTREAM = `127.0.0.1:${upstream.port}`;
const tls = await startTlsServer('server.pem', 'server-key.pem');
const TLS = `127.0.0.1:${tls.port}`;
/** An HTTPS upstream for interception, and the CA trajgate signs its leaves with. */
const secure = await startUpstream({ tls: true });
const ca = makeLocalCa();
const { start, keep } = gatewayPerTest({
  listen: SOCKS_LISTEN,
  network: { allow: [UPSTREAM, echo.authority], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
});

const outcomes = (records: JournalRecord[]) =>
  records.filter((r): r is OutcomeRecord => r.type === 'outcome');
const refusals = (records: JournalRecord[]) =>
  records.filter((r): r is RefusalRecord => r.type === 'refusal');

/** A loopback port nothing listens on (it did a moment ago). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('SOCKS5 without agents', () => {
  it('curl --socks5-hostname reaches an allowed upstream; judged and journaled as CONNECT, via socks', async () => {
    const g = await start();
    const r = await curl(['--socks5-hostname', socksAt(g), `http://${UPSTREAM}/socks`]);
    expect(r.exitCode).toBe(0);
    expect(r.status).toBe(200);
    expect(upstream.seen.at(-1)?.url).toBe('/socks');
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    const event = records.find((x): x is EventRecord => x.type === 'event');
    expect(event).toMatchObject({
      source: 'proxy',
      target: UPSTREAM,
      verdict: 'ALLOW',
      session: '127.0.0.1',
    });
    expect(outcomes(records)[0]).toMatchObject({ rid: event?.seq, status: 200, via: 'socks' });
  });

  it('a host nothing allows: curl gets reply 0x02, the journal the reason', async () => {
    const g = await start();
    const r = await curl(['--socks5-hostname', socksAt(g), `http://127.0.0.2:${upstream.port}/`]);
    expect(r.exitCode).toBe(97);
    expect(r.stderr).toMatch(/SOCKS5.*\(2\)/);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    const event = records.find((x): x is EventRecord => x.type === 'event');
    expect(event).toMatchObject({ target: `127.0.0.2:${upstream.port}`, verdict: 'REVIEW' });
    expect(event?.reason).toMatch(/127\.0\.0\.2/);
    expect(outcomes(records)[0]).toMatchObject({ status: 403, via: 'socks' });
    expect(outcomes(records)[0]?.error).toContain(event?.reason);
  });

  it('an allowed upstream that refuses the connection: reply 0x05, the outcome a failure', async () => {
    const closed = await freePort();
    const g = await start({
      network: { allow: [`127.0.0.1:${closed}`], allowPrivate: ['127.0.0.1/32'] },
    });
    const r = await curl(['--socks5-hostname', socksAt(g), `http://127.0.0.1:${closed}/`]);
    expect(r.exitCode).toBe(97);
    expect(r.stderr).toMatch(/SOCKS5.*\(5\)/);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    expect(outcomes(records)[0]).toMatchObject({ status: 502, failed: true, via: 'socks' });
    expect(outcomes(records)[0]?.error).toMatch(/refused the connection/);
  });

  it('a name is resolved by trajgate: one that resolves to a private address is refused, unconnected', async () => {
    const lookup = async (host: string) => (host === 'inside.test' ? ['127.0.0.5'] : []);
    const g = await start(
      { network: { allow: [`inside.test:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] } },
      { lookup },
    );
    const t = await socksTunnel(g.gw.socks?.port ?? 0, 'inside.test', upstream.port);
    expect(t.reply).toBe(2);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    const event = records.find((x): x is EventRecord => x.type === 'event');
    expect(event).toMatchObject({ target: `inside.test:${upstream.port}` });
    expect(event?.denied).toMatch(/127\.0\.0\.5/);
  });

  it('addresses are judged as the address: IPv4 allowed, IPv6 loopback not, targets canonical', async () => {
    const g = await start();
    const port = [echo.server.port >> 8, echo.server.port & 255];
    const v4 = await socksRaw(
      g.gw.socks?.port ?? 0,
      Buffer.from([5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, ...port]),
      { want: 12 },
    );
    keep({ socket: v4.socket, status: 0, headers: {}, rest: '' });
    expect(v4.got[3]).toBe(0);
    const v6 = await socksRaw(
      g.gw.socks?.port ?? 0,
      Buffer.from([5, 1, 0, 5, 1, 0, 4, ...Array(15).fill(0), 1, ...port]),
      { want: 12 },
    );
    expect(v6.got[3]).toBe(2);
    const records = await waitForRecords(g, (x) => x.type === 'event', 2);
    const events = records.filter((x): x is EventRecord => x.type === 'event');
    expect(events.map((e) => [e.target, e.verdict])).toEqual([
      [echo.authority, 'ALLOW'],
      [`[::1]:${echo.server.port}`, 'REVIEW'],
    ]);
  });

  it('TLS through it naming another server is judged as that name (the SNI check): refused', async () => {
    const g = await start({
      network: { allow: [TLS], allowPrivate: ['127.0.0.1/32'] },
    });
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', tls.port);
    expect(t.reply).toBe(0);
    const error = await new Promise<string>((resolve) => {
      const secure = tlsConnect({
        socket: t.socket,
        servername: 'other.example',
        rejectUnauthorized: false,
      });
      secure.once('secureConnect', () => resolve('connected'));
      secure.once('error', (err) => resolve(err.message));
    });
    expect(error).toMatch(/access denied/i);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    const events = records.filter((x): x is EventRecord => x.type === 'event');
    expect(events.map((e) => [e.target, e.verdict])).toEqual([
      [TLS, 'ALLOW'],
      [`other.example:${tls.port}`, 'REVIEW'],
    ]);
    expect(outcomes(records)[0]).toMatchObject({ status: 403, sni: 'other.example', via: 'socks' });
  });

  it('a host only path patterns allow: each request inside is read and judged; other bytes refused', async () => {
    const g = await start({
      network: { allow: [`GET http://${UPSTREAM}/ok/`], allowPrivate: ['127.0.0.1/32'] },
    });
    const ok = await curl(['--socks5-hostname', socksAt(g), `http://${UPSTREAM}/ok/x`]);
    expect(ok.status).toBe(200);
    const other = await curl(['--socks5-hostname', socksAt(g), `http://${UPSTREAM}/other`]);
    expect(other.status).toBe(403);
    expect(other.body).toContain('trajgate refused this request: GET http://');
    const t = await socksTunnel(g.gw.socks?.port ?? 0, '127.0.0.1', upstream.port);
    expect(t.reply).toBe(0);
    t.socket.end('\x00\x01 not http\r\n');
    const records = await waitForRecords(g, (x) => x.type === 'refusal');
    expect(refusals(records)[0]).toMatchObject({ status: 400, via: 'socks', target: UPSTREAM });
    expect(refusals(records)[0]?.reason).toMatch(/neither HTTP\/1\.x nor TLS/);
  });

  it('a host in tls.intercept: its HTTPS requests through SOCKS are intercepted and judged by method', async () => {
    const origin = `https://127.0.0.1:${secure.port}`;
    const g = await start(
      interceptConfig({
        ca,
        intercept: [`127.0.0.1:${secure.port}`],
        allow: [`GET ${origin}/`],
        ports: [secure.port],
      }),
    );
    const through = ['--socks5-hostname', socksAt(g), '--cacert', ca.certPath];
    const get = await curl([...through, `${origin}/read`]);
    expect(get.status).toBe(200);
    expect(secure.seen.at(-1)).toMatchObject({ method: 'GET', url: '/read' });
    const post = await curl([...through, '-d', 'x', `${origin}/write`]);
    expect(post.status).toBe(403);
    expect(secure.seen.some((q) => q.url === '/write')).toBe(false);
    const records = await waitForRecords(g, (x) => x.type === 'event', 2);
    const events = records.filter((x): x is EventRecord => x.type === 'event');
    expect(events.map((e) => [e.method, e.target, e.verdict])).toEqual([
      ['GET', `${origin}/read`, 'ALLOW'],
      ['POST', `${origin}/write`, 'REVIEW'],
    ]);
  });
});
