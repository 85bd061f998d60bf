import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { fileGateway } from '../helpers/file-gateway.js';
import {
  connectTunnel,
  exchange,
  openRaw,
  roundTrip,
  startEchoServer,
  startUpgradeServer,
} from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * limits.maxConnections, maxTunnels (with tunnelsPerSession) and keepAliveIdle at small
 * values, with real sockets on loopback: what the client is told, what is journaled, counted.
 */
const upstream = await startUpstream();
const echo = await startEchoServer();
const ws = await startUpgradeServer();
const ADMIN = 'admin-token-0123456789abcdef';
const token = (id: string) => `${id}-token-0123456789abcdef`;
const basic = (id: string) => `Basic ${Buffer.from(`${id}:${token(id)}`).toString('base64')}`;

const { start, keep } = gatewayPerTest({
  network: {
    allow: [`127.0.0.1:${upstream.port}`, `127.0.0.1:${echo.port}`, `127.0.0.1:${ws.port}`],
    allowPrivate: ['127.0.0.1/32'],
  },
  admin: { token: ADMIN },
});

const get = (path: string, extra = '') =>
  `GET ${upstream.url}${path} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n${extra}\r\n`;

async function refusalsAt(g: TestGateway, limit: string): Promise<number> {
  const text = (await adminClient(g.gw.admin.port, ADMIN).get('/metrics')).text;
  const line = new RegExp(`^trajgate_limit_refusals_total\\{limit="${limit}"\\} (\\d+)$`, 'm');
  return Number(line.exec(text)?.[1] ?? 0);
}

describe('limits.maxConnections', () => {
  it('the 4th connection of 3 allowed is answered 503 with the reason; a closed one frees its place', async () => {
    const g = await start({ limits: { maxConnections: 3 } });
    const port = g.gw.proxy.port;
    // Each answered on a keep-alive connection that stays open: the gateway holds all three.
    const open = [];
    for (const path of ['/a', '/b', '/c']) {
      const c = keep(await openRaw(port, get(path)));
      expect(c.status).toBe(200);
      open.push(c);
    }
    const fourth = await exchange(port, get('/d'));
    expect(fourth.status).toBe(503);
    expect(fourth.body).toBe(
      'trajgate: 3 client connections are open, limits.maxConnections: retry later, or raise limits.maxConnections\n',
    );
    expect(fourth.headers.connection).toBe('close');
    expect(fourth.closed).toBe(true);
    expect(upstream.seen.some((r) => r.url === '/d')).toBe(false);
    expect(await refusalsAt(g, 'limits.maxConnections')).toBe(1);
    // The admin listener is not capped by the proxy's limit (the scrape above got through).

    (open[0]?.socket as Socket).destroy();
    let answered = 0;
    await waitFor(
      async () =>
        (answered = (await exchange(port, get('/e', 'Connection: close\r\n'))).status) === 200,
    );
    expect(answered).toBe(200);
    expect(upstream.seen.some((r) => r.url === '/e')).toBe(true);
  });
});

describe('a flood over limits.maxConnections', () => {
  it('16 refused connections at once get their 503; one more is closed unanswered', async () => {
    const g = await start({ limits: { maxConnections: 1 } });
    const port = g.gw.proxy.port;
    expect(keep(await openRaw(port, get('/held'))).status).toBe(200);
    // Half-open clients: they read the 503 but never close, so the gateway holds each answer.
    const refused = async () => {
      const s = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      s.on('error', () => {});
      keep({ socket: s, status: 0, headers: {}, rest: '' });
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString()));
      await new Promise((resolve) => {
        s.once('end', resolve);
        s.once('close', resolve);
      });
      return got;
    };
    // All at once, so the first answers are still held (2 s) when the last arrives.
    const got = await Promise.all(Array.from({ length: 17 }, refused));
    expect(got.filter((t) => /^HTTP\/1\.1 503 /.test(t))).toHaveLength(16);
    expect(got.filter((t) => t === '')).toHaveLength(1);
    expect(await refusalsAt(g, 'limits.maxConnections')).toBe(17);
  });
});

describe('limits.maxTunnels and limits.tunnelsPerSession', () => {
  it('2 in all and 1 per session: a second of a session is 429, a third in all 503, journaled', async () => {
    const ids = ['agent-a', 'agent-b', 'agent-c'];
    const g = await start({
      agents: ids.map((id) => ({ id, token: token(id) })),
      limits: { maxTunnels: 2, tunnelsPerSession: 1 },
    });
    const port = g.gw.proxy.port;
    const tunnel = async (id: string) =>
      keep(
        await connectTunnel(port, `127.0.0.1:${echo.port}`, { 'Proxy-Authorization': basic(id) }),
      );
    const a = await tunnel('agent-a');
    expect(a.status).toBe(200);
    const a2 = await tunnel('agent-a');
    expect(a2.status).toBe(429);
    expect(a2.rest).toContain('limits.tunnelsPerSession');
    const b = await tunnel('agent-b');
    expect(b.status).toBe(200);
    const c = await tunnel('agent-c');
    expect(c.status).toBe(503);
    expect(c.rest).toBe(
      'trajgate: 2 tunnels are open, limits.maxTunnels: retry later, or raise limits.maxTunnels\n',
    );
    const refusals = g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
    expect(refusals).toMatchObject([
      { status: 429, session: 'agent-a', method: 'CONNECT' },
      {
        status: 503,
        session: 'agent-c',
        method: 'CONNECT',
        reason: expect.stringContaining('limits.maxTunnels'),
      },
    ]);
    expect(await refusalsAt(g, 'limits.maxTunnels')).toBe(1);
    expect(await refusalsAt(g, 'limits.tunnelsPerSession')).toBe(1);

    // Once a's tunnel has its outcome, its slot is free: c gets one.
    const event = g.records().find((r) => r.type === 'event' && r.session === 'agent-a');
    a.socket.destroy();
    await waitFor(() => g.records().some((r) => r.type === 'outcome' && r.rid === event?.seq));
    expect((await tunnel('agent-c')).status).toBe(200);
  });
});

describe('limits.keepAliveIdle', () => {
  it('an idle keep-alive connection is closed after 1s, not before', async () => {
    const g = await start({ limits: { keepAliveIdle: '1s' } });
    const c = keep(await openRaw(g.gw.proxy.port, get('/idle')));
    const answered = Date.now();
    expect(c.status).toBe(200);
    expect(c.headers['keep-alive']).toBe('timeout=1');
    await new Promise((resolve) => c.socket.once('close', resolve));
    const idle = Date.now() - answered;
    expect(idle).toBeGreaterThanOrEqual(900);
    // Well under the 5 s it would be otherwise, with room for busy cores.
    expect(idle).toBeLessThan(4_500);
  });
});

describe('limits.maxTunnels and upgrades', () => {
  it('an upgrade over the total is 503 and journaled, before anything is sent upstream', async () => {
    const g = await start({ limits: { maxTunnels: 1 } });
    const port = g.gw.proxy.port;
    expect(keep(await connectTunnel(port, `127.0.0.1:${echo.port}`)).status).toBe(200);
    const url = `http://127.0.0.1:${ws.port}/socket`;
    const head = `GET ${url} HTTP/1.1\r\nHost: 127.0.0.1:${ws.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`;
    const upgrade = keep(await openRaw(port, head));
    expect(upgrade.status).toBe(503);
    expect(upgrade.rest).toContain('limits.maxTunnels');
    expect(ws.upgrades).toHaveLength(0);
    const refusals = g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
    expect(refusals).toMatchObject([{ status: 503, method: 'GET', target: url }]);
  });
});

describe('a reload of the limits', () => {
  it('applies maxConnections and keepAliveIdle to the next connection', async () => {
    const network = {
      allow: [`127.0.0.1:${upstream.port}`],
      allowPrivate: ['127.0.0.1/32'],
    };
    const f = await fileGateway(ADMIN, {
      network,
      limits: { maxConnections: 1, keepAliveIdle: '1s' },
    });
    const port = f.gw.proxy.port;
    const first = await openRaw(port, get('/first'));
    expect(first.headers['keep-alive']).toBe('timeout=1');
    expect((await exchange(port, get('/refused'))).status).toBe(503);
    f.write({ network, limits: { maxConnections: 2, keepAliveIdle: '7s' } });
    expect((await f.gw.reload('test')).restartNeeded).toEqual([]);
    const second = await openRaw(port, get('/second'));
    expect(second.status).toBe(200);
    expect(second.headers['keep-alive']).toBe('timeout=7');
    first.socket.destroy();
    second.socket.destroy();
  });

  it('a lower maxConnections closes no open connection: they go on being served, new ones wait', async () => {
    const network = { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] };
    const f = await fileGateway(ADMIN, { network, limits: { maxConnections: 3 } });
    const port = f.gw.proxy.port;
    const open = [await openRaw(port, get('/a')), await openRaw(port, get('/b'))];
    f.write({ network, limits: { maxConnections: 1 } });
    expect((await f.gw.reload('test')).restartNeeded).toEqual([]);
    expect((await exchange(port, get('/refused'))).status).toBe(503);
    for (const c of open) {
      const again = await roundTrip(c.socket, get('/again'), (got) => / 200 /.test(got));
      expect(again.closed).toBe(false);
      expect(again.got).toMatch(/^HTTP\/1\.1 200 /);
    }
    // Once enough have closed, a new one is accepted under the new cap.
    for (const c of open) c.socket.destroy();
    await waitFor(async () => {
      const later = await openRaw(port, get('/later'));
      later.socket.destroy();
      return later.status === 200;
    });
  });
});
