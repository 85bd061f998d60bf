import { connect as tlsConnect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import type { OutcomeRecord, RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, roundTrip, startEchoServer, startTcpServer } from '../helpers/raw.js';
import { SOCKS_LISTEN, socksTunnel } from '../helpers/socks.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * Blind tunnels are named by their client's first bytes (`protocol` on the outcome), and a
 * tunnel that only `ssh://` or `postgres://` patterns allow must carry that protocol: else it
 * is closed before a byte of it goes up, journaled as a refusal with the reason.
 */
let received = '';
/** Speaks first, as an SSH server does, then echoes; keeps what it was sent. */
const sshLike = await startTcpServer((socket) => {
  socket.write('SSH-2.0-OpenSSH_test\r\n');
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    socket.write(d);
  });
});
const pgLike = await startEchoServer();
const anyEcho = await startEchoServer();
const SSH = `127.0.0.1:${sshLike.port}`;
const PG = `127.0.0.1:${pgLike.port}`;
const ANY = `127.0.0.1:${anyEcho.port}`;
/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

const { start, keep } = gatewayPerTest({
  listen: SOCKS_LISTEN,
  network: {
    allow: [`ssh://${SSH}`, `postgres://${PG}`, ANY],
    allowPrivate: ['127.0.0.1/32'],
  },
});

async function outcome(g: TestGateway): Promise<OutcomeRecord> {
  const records = await waitForRecords(g, (r) => r.type === 'outcome');
  return records.find((r): r is OutcomeRecord => r.type === 'outcome') as OutcomeRecord;
}
const refusals = (g: TestGateway) =>
  g.records().filter((r): r is RefusalRecord => r.type === 'refusal');

async function open(g: TestGateway, target: string) {
  const t = keep(await connectTunnel(g.gw.proxy.port, target));
  expect(t.status).toBe(200);
  return t;
}

describe('tunnels named by protocol', () => {
  it('an SSH banner sent after the server spoke, in pieces: relayed, protocol ssh', async () => {
    const g = await start();
    const t = await open(g, SSH);
    const rest = t.rest.endsWith('\r\n')
      ? ''
      : (await roundTrip(t.socket, '', (got) => (t.rest + got).endsWith('\r\n'))).got;
    expect(t.rest + rest).toBe('SSH-2.0-OpenSSH_test\r\n');
    t.socket.write('SS');
    const r = await roundTrip(t.socket, 'H-2.0-client\r\n', (got) => got.endsWith('\r\n'));
    expect(r.got).toBe('SSH-2.0-client\r\n');
    t.socket.end();
    expect(await outcome(g)).toMatchObject({ status: 200, protocol: 'ssh' });
    expect(refusals(g)).toEqual([]);
  });

  it('anything else through a tunnel only ssh:// allows: closed before a byte goes up', async () => {
    const g = await start();
    const before = received.length;
    const t = await open(g, SSH);
    const r = await roundTrip(t.socket, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(r.closed).toBe(true);
    // The server's banner came through; the client's bytes never reached it.
    expect(t.rest + r.got).toBe('SSH-2.0-OpenSSH_test\r\n');
    expect(received.length).toBe(before);
    const reason = `the patterns that allow this tunnel (ssh://${SSH}) require SSH, and its first bytes are no protocol trajgate knows`;
    expect(await outcome(g)).toMatchObject({ protocol: 'unknown', bytesUp: 0, error: reason });
    expect(refusals(g)).toMatchObject([{ status: 403, target: SSH, reason }]);
  });

  it('the same through SOCKS5: refused before a byte goes up, the refusal says via socks', async () => {
    const g = await start();
    const before = received.length;
    const { socket, reply } = await socksTunnel(
      g.gw.socks?.port as number,
      '127.0.0.1',
      sshLike.port,
    );
    keep({ socket, status: 200, headers: {}, rest: '' });
    expect(reply).toBe(0);
    const r = await roundTrip(socket, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(r.closed).toBe(true);
    expect(received.length).toBe(before);
    expect(await outcome(g)).toMatchObject({ protocol: 'unknown', bytesUp: 0, via: 'socks' });
    expect(refusals(g)).toMatchObject([{ status: 403, target: SSH, via: 'socks' }]);
  });

  it('TLS through a tunnel only ssh:// allows is refused, named tls', async () => {
    const g = await start();
    const t = await open(g, SSH);
    const tls = tlsConnect({ socket: t.socket, rejectUnauthorized: false });
    const closed = await new Promise<boolean>((resolve) => {
      tls.once('secureConnect', () => resolve(false));
      tls.once('error', () => resolve(true));
      tls.once('close', () => resolve(true));
    });
    expect(closed).toBe(true);
    expect(await outcome(g)).toMatchObject({ protocol: 'tls', bytesUp: 0 });
    expect(refusals(g)[0]?.reason).toMatch(/require SSH, and its first bytes are TLS$/);
  });

  it('a PostgreSQL SSLRequest through a postgres:// tunnel: relayed, protocol postgres', async () => {
    const g = await start();
    const t = await open(g, PG);
    t.socket.write(SSL_REQUEST);
    const r = await roundTrip(t.socket, '', (got) => got.length === 8);
    expect(r.got).toBe(SSL_REQUEST.toString('latin1'));
    t.socket.end();
    expect(await outcome(g)).toMatchObject({ status: 200, protocol: 'postgres', bytesUp: 8 });
  });

  it('an SSH banner through a tunnel only postgres:// allows is refused', async () => {
    const g = await start();
    const t = await open(g, PG);
    const r = await roundTrip(t.socket, 'SSH-2.0-client\r\n');
    expect(r).toEqual({ got: '', closed: true });
    expect(await outcome(g)).toMatchObject({ protocol: 'ssh', bytesUp: 0 });
    expect(refusals(g)[0]?.reason).toMatch(/require PostgreSQL, and its first bytes are SSH$/);
  });

  it('a pattern without a scheme requires nothing: any bytes relayed, named unknown', async () => {
    const g = await start();
    const t = await open(g, ANY);
    const r = await roundTrip(t.socket, 'x', (got) => got === 'x');
    expect(r.got).toBe('x');
    t.socket.end();
    expect(await outcome(g)).toMatchObject({ status: 200, protocol: 'unknown', bytesUp: 1 });
  });
});
