import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { EventRecord, OutcomeRecord, RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, roundTrip, startTcpServer } from '../helpers/raw.js';
import { handshakeThrough, startTlsServer } from '../helpers/tls.js';
import { waitFor } from '../helpers/wait.js';

/**
 * SNI on blind tunnels: the ClientHello's server name is read before anything is relayed.
 * The TLS upstream sits behind a recorder that counts the bytes it was sent, so a test sees
 * that a refused tunnel relayed nothing. Test names resolve to loopback through `lookup`.
 */
const tls = await startTlsServer('server.pem', 'server-key.pem');
const received: number[] = [];
const recorder = await startTcpServer((socket) => {
  const at = received.push(0) - 1;
  const up = connect(tls.port, '127.0.0.1');
  up.on('error', () => socket.destroy());
  socket.on('data', (d: Buffer) => (received[at] = (received[at] ?? 0) + d.length));
  socket.pipe(up).pipe(socket);
});
/** Speaks first, as SMTP or SSH servers do. */
const banner = await startTcpServer((socket) => socket.end('220 banner\r\n'));
const P = recorder.port;
const lookup: Lookup = async (host) => (host.endsWith('.test') ? ['127.0.0.1'] : []);

const { start } = gatewayPerTest({
  network: {
    allow: [`127.0.0.1:${P}`, `front.test:${P}`, `alias.test:${P}`, `127.0.0.1:${banner.port}`],
    allowPrivate: ['127.0.0.1/32'],
  },
});
const open = (extra: Record<string, unknown> = {}) => start(extra, { lookup });
const insecure = { rejectUnauthorized: false };

const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');

describe('a blind tunnel whose TLS names its own host, or none, opens', () => {
  it.each([
    ['the CONNECT host', `front.test:${P}`, 'front.test', 'front.test'],
    ['the CONNECT host, another case', `front.test:${P}`, 'FRONT.test', 'FRONT.test'],
    ['no name (an IP CONNECT)', `127.0.0.1:${P}`, undefined, null],
  ])('%s: relayed, sni in the outcome', async (_, authority, servername, sni) => {
    const g = await open();
    const done = await handshakeThrough(g.gw.proxy.port, authority, {
      ...insecure,
      ...(servername === undefined ? {} : { servername }),
    });
    expect(done.ok).toBe(true);
    if (done.ok) done.socket.destroy();
    await waitFor(() => outcomes(g).length === 1);
    expect(outcomes(g)[0]).toMatchObject({ status: 200, sni });
    expect(outcomes(g)[0]?.bytesUp).toBeGreaterThan(0);
  });
});

describe('TLS naming another server (domain fronting)', () => {
  it('a name nobody allowed: refused with an alert, judged and journaled as that name, nothing relayed', async () => {
    const g = await open();
    const before = received.length;
    const done = await handshakeThrough(g.gw.proxy.port, `127.0.0.1:${P}`, {
      ...insecure,
      servername: 'other.example',
    });
    expect(done).toMatchObject({ ok: false, status: 200 });
    expect(done.ok ? '' : done.error).toMatch(/access denied/i);
    await waitFor(() => outcomes(g).length === 1);
    expect(events(g).map((e) => [e.target, e.verdict])).toEqual([
      [`127.0.0.1:${P}`, 'ALLOW'],
      [`other.example:${P}`, 'REVIEW'],
    ]);
    const out = outcomes(g)[0] as OutcomeRecord;
    expect(out).toMatchObject({
      rid: events(g)[0]?.seq,
      status: 403,
      bytesUp: 0,
      sni: 'other.example',
    });
    expect(out.error).toMatch(/^TLS in the tunnel names other\.example, not 127\.0\.0\.1: /);
    // The upstream was connected to but never sent a byte.
    expect(received.slice(before).every((n) => n === 0)).toBe(true);
  });

  it('a name itself allowed: the tunnel goes on as that name, its own event and outcome', async () => {
    const g = await open();
    const done = await handshakeThrough(g.gw.proxy.port, `127.0.0.1:${P}`, {
      ...insecure,
      servername: 'alias.test',
    });
    expect(done.ok).toBe(true);
    if (done.ok) done.socket.destroy();
    await waitFor(() => outcomes(g).length === 2);
    const [connectEvent, aliasEvent] = events(g);
    expect([connectEvent?.target, aliasEvent?.target]).toEqual([
      `127.0.0.1:${P}`,
      `alias.test:${P}`,
    ]);
    expect(aliasEvent?.verdict).toBe('ALLOW');
    expect(outcomes(g)).toEqual([
      expect.objectContaining({
        rid: connectEvent?.seq,
        status: 200,
        bytesUp: 0,
        sni: 'alias.test',
      }),
      expect.objectContaining({ rid: aliasEvent?.seq, status: 200, sni: 'alias.test' }),
    ]);
    expect(outcomes(g)[1]?.bytesUp).toBeGreaterThan(0);
  });
});

/** A hand-made ClientHello record naming `names` (RFC 8446 § 4.1.2), plus `extra` extensions. */
function hello(names: string[], extra: Buffer = Buffer.alloc(0)): Buffer {
  const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
  const list = Buffer.concat(
    names.map((n) => Buffer.concat([Buffer.from([0]), u16(n.length), Buffer.from(n)])),
  );
  const sni = Buffer.concat([u16(0), u16(list.length + 2), u16(list.length), list]);
  const exts = Buffer.concat([sni, extra]);
  const body = Buffer.concat([
    Buffer.from([3, 3]),
    randomBytes(32),
    Buffer.from([0, 0, 2, 0x13, 0x01, 1, 0]),
    u16(exts.length),
    exts,
  ]);
  const msg = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 0xff]), body]);
  return Buffer.concat([Buffer.from([0x16, 3, 1]), u16(msg.length), msg]);
}

describe('a ClientHello that cannot be judged is refused, journaled, nothing relayed', () => {
  const ech = Buffer.from([0xfe, 0x0d, 0, 4, 1, 2, 3, 4]);
  it.each([
    ['two server names', hello(['front.test', 'other.example']), 403, /names 2 servers/, 0x31],
    ['Encrypted Client Hello', hello(['front.test'], ech), 403, /Encrypted Client Hello/, 0x31],
    ['an IP-literal name', hello(['127.0.0.1']), 400, /is an IP address/, 0x32],
    [
      'a length that lies',
      Buffer.from([0x16, 3, 1, 0, 5, 1, 0, 0, 1, 3]),
      400,
      /cannot be read/,
      0x32,
    ],
  ])('%s', async (_, bytes, status, reason, alert) => {
    const g = await open();
    const before = received.length;
    const t = await connectTunnel(g.gw.proxy.port, `front.test:${P}`);
    expect(t.status).toBe(200);
    t.socket.write(bytes);
    const { got, closed } = await roundTrip(t.socket, '');
    t.socket.destroy();
    expect(closed).toBe(true);
    // A fatal TLS alert: access_denied (49) or decode_error (50), RFC 8446 § 6.2.
    expect(Buffer.from(got, 'latin1')).toEqual(Buffer.from([0x15, 3, 3, 0, 2, 2, alert]));
    await waitFor(() => outcomes(g).length === 1);
    const refusal = g.records().find((r): r is RefusalRecord => r.type === 'refusal');
    expect(refusal).toMatchObject({ status, target: `front.test:${P}` });
    expect(refusal?.reason).toMatch(reason);
    expect(outcomes(g)[0]).toMatchObject({ status, bytesUp: 0, sni: null });
    expect(received.slice(before).every((n) => n === 0)).toBe(true);
  });

  it('no ClientHello within limits.headerTimeout → 408, closed', async () => {
    const g = await open({ limits: { headerTimeout: '500ms' } });
    const t = await connectTunnel(g.gw.proxy.port, `front.test:${P}`);
    const { closed } = await roundTrip(t.socket, '');
    expect(closed).toBe(true);
    await waitFor(() => outcomes(g).length === 1);
    expect(g.records().find((r) => r.type === 'refusal')).toMatchObject({ status: 408 });
  });
});

describe('a tunnel that is not TLS from the client, off port 443, is relayed as before', () => {
  it('an upstream that speaks first: its banner comes through at once', async () => {
    const g = await open();
    const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${banner.port}`);
    const { got } = await roundTrip(t.socket, '', (s) => s.includes('banner'));
    expect(t.rest + got).toBe('220 banner\r\n');
    t.socket.destroy();
    await waitFor(() => outcomes(g).length === 1);
    expect(outcomes(g)[0]).toMatchObject({ status: 200, sni: null, bytesDown: 12 });
  });
});
