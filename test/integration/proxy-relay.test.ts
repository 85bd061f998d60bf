import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, roundTrip, startEchoServer, startTcpServer } from '../helpers/raw.js';
import type { Tunnel } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import type { OutcomeRecord } from '../../src/journal/records.js';

/**
 * The CONNECT relay (reusable read buffers, handles moved to new sockets): byte-exact both
 * ways, bytes that arrive before it starts, server-first protocols, half-close, idle timeout.
 */
const echo = await startEchoServer();
const banner = await startTcpServer((socket) => {
  socket.write('220 banner before the client speaks\r\n');
  socket.pipe(socket);
});
// Counts what it receives until the client half-closes, then answers with the count.
const counter = createServer({ allowHalfOpen: true }, (socket) => {
  let n = 0;
  socket.on('data', (d: Buffer) => (n += d.length));
  socket.on('end', () => socket.end(`received ${n}\n`));
  socket.on('error', () => {});
});
await new Promise<void>((r) => counter.listen(0, '127.0.0.1', r));
const counterPort = (counter.address() as AddressInfo).port;
afterAll(() => new Promise<void>((r) => counter.close(() => r())));

const ports = [echo.port, banner.port, counterPort];
const {
  start: startWith,
  keep,
  stopped,
} = gatewayPerTest({
  network: { allow: ports.map((p) => `127.0.0.1:${p}`), allowPrivate: ['127.0.0.1/32'], ports },
});
const start = (limits: Record<string, unknown> = {}) => startWith({ limits });

async function tunnelTo(g: TestGateway, port: number): Promise<Tunnel> {
  const t = keep(await connectTunnel(g.gw.proxy.port, `127.0.0.1:${port}`));
  expect(t.status).toBe(200);
  return t;
}

async function outcome(g: TestGateway): Promise<OutcomeRecord> {
  let found: OutcomeRecord | undefined;
  await waitFor(() => {
    found = g.records().find((r): r is OutcomeRecord => r.type === 'outcome');
    return found !== undefined;
  });
  return found as OutcomeRecord;
}

const sha256 = (chunks: Buffer[]) => {
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c);
  return hash.digest('hex');
};

describe('CONNECT relay', () => {
  it('24 MiB of random bytes come back from an echo server unchanged, counted both ways', async () => {
    const g = await start();
    const t = await tunnelTo(g, echo.port);
    const sent = Array.from({ length: 24 }, () => randomBytes(2 ** 20));
    // Not a TLS handshake byte: a tunnel whose first byte is 0x16 must carry a readable hello.
    (sent[0] as Buffer)[0] = 0;
    const got: Buffer[] = [];
    // openRaw reads as latin1, which maps bytes to chars one to one.
    t.socket.on('data', (d: string) => got.push(Buffer.from(d, 'latin1')));
    const ended = new Promise<void>((r) => t.socket.once('end', r));
    for (const chunk of sent) {
      if (!t.socket.write(chunk)) await new Promise((r) => t.socket.once('drain', r));
    }
    t.socket.end(); // the echo server ends after its last byte; that end must come back
    await ended;
    expect(got.reduce((n, c) => n + c.length, 0)).toBe(24 * 2 ** 20);
    expect(sha256(got)).toBe(sha256(sent));
    expect(await outcome(g)).toMatchObject({ status: 200, bytesUp: 24 * 2 ** 20 });
    expect((await outcome(g)).bytesDown).toBe(24 * 2 ** 20);
  });

  it('bytes sent with the CONNECT and before its 200 reach the upstream first, in order', async () => {
    const g = await start();
    const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
    socket.on('error', () => {});
    const target = `127.0.0.1:${echo.port}`;
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\nfirst-`);
    socket.write('second-');
    const { got } = await roundTrip(socket, 'third', (s) => s.endsWith('third'));
    socket.destroy();
    expect(got).toBe('HTTP/1.1 200 Connection Established\r\n\r\nfirst-second-third');
  });

  it('a server that speaks first is heard after the 200', async () => {
    const g = await start();
    const t = await tunnelTo(g, banner.port);
    // The banner may arrive with the 200 or after it.
    const { got } = t.rest.includes('\r\n')
      ? { got: '' }
      : await roundTrip(t.socket, '', (s) => s.includes('\r\n'));
    expect(t.rest + got).toBe('220 banner before the client speaks\r\n');
    const echoed = await roundTrip(t.socket, 'ping', (s) => s === 'ping');
    expect(echoed.got).toBe('ping');
  });

  it("a client's half-close passes through and the upstream's answer still comes back", async () => {
    const g = await start();
    const t = await tunnelTo(g, counterPort);
    t.socket.write('x'.repeat(100_000));
    t.socket.end();
    const { got, closed } = await roundTrip(t.socket, '', () => false);
    expect(got).toBe('received 100000\n');
    expect(closed).toBe(true);
    expect(await outcome(g)).toMatchObject({ status: 200, bytesUp: 100_000, bytesDown: 16 });
  });

  it('a client that sends its bytes and its end with the CONNECT still gets the answer, and the tunnel closes', async () => {
    const g = await start();
    const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
    socket.on('error', () => {});
    const target = `127.0.0.1:${counterPort}`;
    const before = Date.now();
    socket.end(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n12345`);
    const { got, closed } = await roundTrip(socket, '', () => false, 5_000);
    expect(got).toBe('HTTP/1.1 200 Connection Established\r\n\r\nreceived 5\n');
    expect(closed).toBe(true);
    expect(Date.now() - before).toBeLessThan(3_000); // not held open until limits.tunnelIdle
    expect(await outcome(g)).toMatchObject({ status: 200, bytesUp: 5, bytesDown: 11 });
  });

  it('a tunnel idle past limits.tunnelIdle is closed and the outcome says why', async () => {
    const g = await start({ tunnelIdle: '300ms' });
    const t = await tunnelTo(g, echo.port);
    const before = Date.now();
    const { closed } = await roundTrip(t.socket, 'once', () => false, 5_000);
    expect(closed).toBe(true);
    expect(Date.now() - before).toBeLessThan(3_000);
    expect(await outcome(g)).toMatchObject({ bytesUp: 4, bytesDown: 4, error: 'idle for 300 ms' });
  });

  it('stopping the gateway closes an open tunnel and the process keeps no socket', async () => {
    const g = await start({ drainTimeout: '200ms' });
    const t = await tunnelTo(g, echo.port);
    expect((await roundTrip(t.socket, 'up', (s) => s === 'up')).got).toBe('up');
    const closed = new Promise<void>((r) => t.socket.once('close', r));
    await g.stop();
    stopped();
    await closed;
    await waitFor(() => echo.open === 0);
  });
});
