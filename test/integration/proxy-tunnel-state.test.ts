import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { OutcomeRecord, TunnelRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, openRaw, roundTrip, startTcpServer } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Judge what you forward: a decision to open a tunnel covers it only while the
 * session is active and its approval valid. Loopback only: the tunnel goes to an echo server
 * that also keeps its sockets, so the test can push bytes from the upstream side.
 */
const held: Socket[] = [];
let received = '';
const echo = await startTcpServer((socket) => {
  held.push(socket);
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    received += d;
    socket.write(d);
  });
});
/** An upstream nothing allows: two requests to it pause the session. */
const stranger = await startUpstream();
const ECHO = `127.0.0.1:${echo.port}`;
const SESSION = '127.0.0.1';

const { start, keep } = gatewayPerTest({
  network: { allow: [ECHO], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
});

const tunnelRecords = (g: TestGateway) =>
  g.records().filter((r): r is TunnelRecord => r.type === 'tunnel');

/** Two unapproved requests: REVIEW, then PAUSE (blocked). */
async function pauseSession(g: TestGateway): Promise<void> {
  expect((await curl(['-x', g.proxyUrl, `${stranger.url}/one`])).status).toBe(403);
  expect((await curl(['-x', g.proxyUrl, `${stranger.url}/two`])).status).toBe(403);
  expect(g.gw.sessions.isPaused(SESSION)).toBe(true);
}

async function openEchoTunnel(g: TestGateway): Promise<Socket> {
  const t = keep(await connectTunnel(g.gw.proxy.port, ECHO));
  expect(t.status).toBe(200);
  const r = await roundTrip(t.socket, 'hello', (got) => got === 'hello');
  expect(r.got).toBe('hello');
  return t.socket;
}

/** Waits `ms` and says what arrived meanwhile: for asserting that nothing does. */
async function quietFor(socket: Socket, ms: number): Promise<string> {
  return (await roundTrip(socket, '', () => false, ms)).got;
}

describe('open tunnels follow the session', () => {
  it('a pause freezes both directions, a resume thaws them, all journaled', async () => {
    const g = await start();
    const socket = await openEchoTunnel(g);
    const upstream = held.at(-1) as Socket;
    const event = g.records().find((r) => r.type === 'event' && r.target === ECHO);
    await pauseSession(g);
    await waitFor(() => tunnelRecords(g).some((r) => r.change === 'frozen'));
    expect(tunnelRecords(g)[0]).toMatchObject({
      session: SESSION,
      target: ECHO,
      rid: event?.seq,
      change: 'frozen',
      reason: 'session paused',
    });
    const before = received.length;
    socket.write('after-pause');
    upstream.write('pushed');
    expect(await quietFor(socket, 400)).toBe('');
    expect(received.length).toBe(before);
    g.gw.sessions.resume(SESSION);
    const r = await roundTrip(
      socket,
      '',
      (got) => got.includes('after-pause') && got.includes('pushed'),
    );
    expect(r.got).toContain('pushed');
    expect(r.got).toContain('after-pause');
    expect(received.slice(before)).toBe('after-pause');
    expect(tunnelRecords(g).map((t) => t.change)).toEqual(['frozen', 'thawed']);
    const again = await roundTrip(socket, 'still', (got) => got === 'still');
    expect(again.got).toBe('still');
  });

  it('a tunnel opened while the session is paused is held, not answered', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s' } });
    await curl(['-x', g.proxyUrl, `${stranger.url}/one`]);
    const second = curl(['-x', g.proxyUrl, `${stranger.url}/two`]);
    await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
    const pending = openRaw(g.gw.proxy.port, `CONNECT ${ECHO} HTTP/1.1\r\nHost: ${ECHO}\r\n\r\n`);
    await waitFor(() => g.gw.sessions.held(SESSION).length === 2);
    g.gw.sessions.resume(SESSION, { reset: true });
    const t = keep(await pending);
    expect(t.status).toBe(200);
    expect((await second).status).toBe(403); // judged again on resume: still unapproved
  });

  it('deny closes frozen tunnels', async () => {
    const g = await start();
    const socket = await openEchoTunnel(g);
    await pauseSession(g);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    g.gw.sessions.deny(SESSION);
    await closed;
    await waitFor(() => tunnelRecords(g).some((r) => r.change === 'closed'));
    expect(tunnelRecords(g).at(-1)).toMatchObject({
      change: 'closed',
      reason: 'denied by an operator',
    });
    await waitFor(() =>
      g.records().some((r): r is OutcomeRecord => r.type === 'outcome' && r.status === 200),
    );
  });

  it('the hold timeout closes a frozen tunnel', async () => {
    const g = await start({ policy: { pause: 'block', holdTimeout: '300ms' } });
    const socket = await openEchoTunnel(g);
    await pauseSession(g);
    await new Promise<void>((r) => socket.once('close', () => r()));
    expect(tunnelRecords(g).at(-1)).toMatchObject({
      change: 'closed',
      reason: 'no operator decided within the hold time (300 ms)',
    });
  });

  it('a tunnel admitted by an approval closes when the approval expires', async () => {
    const g = await start({ network: { allow: [], allowPrivate: ['127.0.0.1/32'] } });
    g.gw.sessions.approve({ pattern: ECHO, session: SESSION, expiresAt: Date.now() + 500 });
    const socket = await openEchoTunnel(g);
    await new Promise<void>((r) => socket.once('close', () => r()));
    expect(tunnelRecords(g)).toEqual([
      expect.objectContaining({
        change: 'closed',
        reason: 'the approval that admitted it expired',
      }),
    ]);
    // The same tunnel now is an unapproved crossing.
    const t = keep(await connectTunnel(g.gw.proxy.port, ECHO));
    expect(t.status).toBe(403);
  });

  it.each(['end', 'destroy'] as const)(
    'a held CONNECT whose client leaves (%s) is released at once',
    async (how) => {
      const g = await start({ policy: { pause: 'hold', holdTimeout: '30s' } });
      await curl(['-x', g.proxyUrl, `${stranger.url}/one`]);
      const second = curl(['-x', g.proxyUrl, `${stranger.url}/two`]);
      await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
      const socket = connect({ host: '127.0.0.1', port: g.gw.proxy.port });
      socket.on('error', () => undefined);
      socket.write(`CONNECT ${ECHO} HTTP/1.1\r\nHost: ${ECHO}\r\n\r\n`);
      await waitFor(() => g.gw.sessions.held(SESSION).length === 2);
      if (how === 'end') socket.end();
      else socket.destroy();
      await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
      await waitFor(() =>
        g
          .records()
          .some(
            (r) =>
              r.type === 'outcome' && r.error === 'client closed while held' && r.status === null,
          ),
      );
      g.gw.sessions.deny(SESSION);
      expect((await second).status).toBe(403);
      socket.destroy();
    },
  );
});
