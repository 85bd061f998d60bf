import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { TunnelRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { FileGateway } from '../helpers/file-gateway.js';
import { fileGateway } from '../helpers/file-gateway.js';
import {
  connectTunnel,
  openRaw,
  roundTrip,
  startEchoServer,
  startTcpServer,
} from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A reload re-judges every live flow before it is answered — one waiting for
 * its first byte, one waiting for its `101`, one relaying — and closes exactly those whose basis
 * it took away: a rotated agent token, a narrowed `allowPrivate`, an allow entry gone (every
 * rule of the basis is in test/unit/flow-basis.test.ts). Each `closed` is counted in the answer and journaled. Loopback only.
 */
const ADMIN = 'admin-token-for-flow-reload-012345';
const TOKEN_A = 'agent-a-token-0123456789abcdef';
const TOKEN_B = 'agent-a-rotated-token-0123456789';
/** agent-a's own workspace (an existing folder, apart from the gateways' data). */
const WS = tempDir('trajgate-ws-');
const upstream = await startUpstream();
const echo = await startEchoServer();
const ECHO = `127.0.0.1:${echo.port}`;
/** Holds every upgrade's `101` back: the flow waits for it until the test is done. */
const holding = await startTcpServer((socket) => socket.resume());
const HOLDING = `127.0.0.1:${holding.port}`;

const sockets: Socket[] = [];
afterEach(() => sockets.splice(0).forEach((s) => s.destroy()));
const kept = <T extends { socket: Socket }>(t: T): T => {
  sockets.push(t.socket);
  return t;
};

const reload = (g: FileGateway) => adminClient(g.gw.admin.port, ADMIN).post('/api/reload', {});
const closedRecords = (g: FileGateway) =>
  g
    .records()
    .filter(
      (r): r is TunnelRecord => (r.type === 'tunnel' || r.type === 'flow') && r.change === 'closed',
    );
const closedBy = (socket: Socket) => new Promise<void>((r) => socket.once('close', () => r()));
const basic = (token: string) => `Basic ${Buffer.from(`agent-a:${token}`).toString('base64')}`;

describe('a reload re-judges live flows', () => {
  it('a rotated agent token closes a tunnel waiting for its first byte', async () => {
    const agents = (token: string) => ({
      agents: [{ id: 'agent-a', token, workspace: WS }],
      network: {
        allow: [`GET http://127.0.0.1:${upstream.port}/x`],
        allowPrivate: ['127.0.0.1/32'],
      },
    });
    const g = await fileGateway(ADMIN, agents(TOKEN_A));
    // Only a method pattern allows the host: the tunnel is read, and waits for a request line.
    const t = kept(
      await connectTunnel(g.gw.proxy.port, `127.0.0.1:${upstream.port}`, {
        'Proxy-Authorization': basic(TOKEN_A),
      }),
    );
    expect(t.status).toBe(200);
    const closed = closedBy(t.socket);
    g.write(agents(TOKEN_B));
    const res = await reload(g);
    expect(res.status).toBe(200);
    expect(res.json.closed).toBe(1);
    await closed;
    expect(closedRecords(g)).toEqual([
      expect.objectContaining({
        type: 'tunnel',
        flow: 'read',
        session: 'agent-a',
        reason: 'its agent credentials changed or were removed (config reloaded)',
      }),
    ]);
    expect(upstream.seen).toHaveLength(0);
  });

  it('a rotated agent token refuses its held requests: none is ever sent', async () => {
    const agents = (token: string) => ({
      agents: [{ id: 'agent-a', token, workspace: WS }],
      network: { allow: [], allowPrivate: ['127.0.0.1/32'] },
      policy: { pause: 'hold', holdTimeout: '30s' },
    });
    const g = await fileGateway(ADMIN, agents(TOKEN_A));
    const proxy = `http://agent-a:${TOKEN_A}@127.0.0.1:${g.gw.proxy.port}`;
    expect((await curl(['-x', proxy, `${upstream.url}/first`])).status).toBe(403);
    const held = curl(['-x', proxy, `${upstream.url}/second`]);
    await waitFor(() => g.gw.sessions.held('agent-a').length === 1, 20_000, 'the request held');
    g.write(agents(TOKEN_B));
    expect((await reload(g)).status).toBe(200);
    const answered = await held;
    expect(answered.status).toBe(403);
    expect(answered.body).toContain('no longer valid');
    expect(g.gw.sessions.held('agent-a')).toEqual([]);
    expect(upstream.seen).toHaveLength(0);
  });

  it('a narrowed allowPrivate closes an open tunnel to an address it no longer allows', async () => {
    const g = await fileGateway(ADMIN, {
      network: { allow: [ECHO], allowPrivate: ['127.0.0.1/32'] },
    });
    const t = kept(await connectTunnel(g.gw.proxy.port, ECHO));
    expect(t.status).toBe(200);
    expect((await roundTrip(t.socket, 'ping', (got) => got === 'ping')).got).toBe('ping');
    const closed = closedBy(t.socket);
    g.write({ network: { allow: [ECHO], allowPrivate: [] } });
    expect((await reload(g)).json.closed).toBe(1);
    await closed;
    expect(closedRecords(g).at(-1)?.reason).toMatch(
      /^its address is no longer allowed: private address \(loopback 127\.0\.0\.1\) \(config reloaded\)$/,
    );
  });

  it('an allow entry removed while an upgrade waits for its 101: closed, 403, never 101', async () => {
    const allow = (list: string[]) => ({
      network: { allow: list, allowPrivate: ['127.0.0.1/32'] },
    });
    const g = await fileGateway(ADMIN, allow([HOLDING]));
    const before = holding.connections;
    const pending = openRaw(
      g.gw.proxy.port,
      `GET http://${HOLDING}/ws HTTP/1.1\r\nHost: ${HOLDING}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      30_000,
    );
    await waitFor(() => holding.connections > before, 20_000, 'the upgrade sent upstream');
    g.write(allow([]));
    expect((await reload(g)).json.closed).toBe(1);
    const t = kept(await pending);
    expect(t.status).toBe(403);
    expect(closedRecords(g).at(-1)).toMatchObject({ type: 'tunnel', flow: 'upgrade' });
    expect(closedRecords(g).at(-1)?.reason).toBe(
      'no approval or allowlist entry covers it any more (config reloaded)',
    );
  });
});
