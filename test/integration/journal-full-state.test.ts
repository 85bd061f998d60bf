import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, viaProxy } from '../helpers/admin.js';
import { fillDisk } from '../helpers/full-disk.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { postAsAgent } from '../helpers/ingest.js';
import { connectTunnel, roundTrip, startEchoServer } from '../helpers/raw.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Decide on a copy, commit after the write. The journal writer's descriptor
 * is pointed at /dev/full (a full disk) under a running gateway: every request and operator
 * action refused meanwhile leaves each session's API view as it was, and a gateway started
 * afterwards on the same journal shows the same view. Loopback only.
 */
const allowed = await startUpstream();
const other = await startUpstream();
const echo = await startEchoServer();
const ECHO = `127.0.0.1:${echo.port}`;
const dir = tempDir();
const config = {
  agents: AGENTS,
  policy: { holdTimeout: '30s' },
  network: { allow: [`127.0.0.1:${allowed.port}`, ECHO], allowPrivate: ['127.0.0.1/32'] },
  admin: { token: ADMIN },
  bridge: {
    upstream: allowed.url,
    protocol: 'http',
    routes: [{ method: 'POST', path: '/exec', kind: 'command', target: '$.cwd' }],
  },
};
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

type View = Awaited<ReturnType<typeof view>>;

/** Every session as operators see it (list, detail) and the approvals, less the clock's part. */
async function view(api: AdminClient) {
  const sessions = (await api.get('/api/sessions')).json.sessions as { id: string }[];
  const details = [];
  for (const { id } of sessions) {
    const { heldRequests, ...detail } = (await api.get(`/api/sessions/${id}`)).json;
    const held = (heldRequests as Record<string, unknown>[]).map(
      ({ waitedMs: _w, timeoutInMs: _t, ...h }) => h,
    );
    details.push({ ...detail, heldRequests: held });
  }
  return { sessions, details, approvals: (await api.get('/api/approvals')).json.approvals };
}

/** What a restart keeps: held connections die with the process, the pause record says so. */
function lasting(v: View): unknown {
  return {
    sessions: v.sessions.map(({ held: _h, ...s }: Record<string, unknown>) => s),
    details: v.details.map(({ held: _h, heldRequests: _r, pause, ...d }) => ({
      ...d,
      pause: pause === null ? null : { ...pause, restored: undefined },
    })),
    approvals: v.approvals,
  };
}

let before: View;

describe('a full disk changes no session state', () => {
  it('refused requests and operator actions answer 503 and leave every view as it was', async () => {
    const g = await startTestGateway(config, { dir });
    gateways.push(g);
    const api = adminClient(g.gw.admin.port, ADMIN);
    // agent-1: one REVIEW, an approval, and an open tunnel; agent-2: paused, one request held.
    expect((await viaProxy(g.proxyUrl, `${other.url}/first`, auth(0))).status).toBe(403);
    expect((await api.post('/api/sessions/agent-1/approve', { pattern: 'a.test' })).status).toBe(
      201,
    );
    const basic = Buffer.from(`${AGENTS[0]?.id}:${AGENTS[0]?.token}`).toString('base64');
    const tunnel = await connectTunnel(g.gw.proxy.port, ECHO, {
      'Proxy-Authorization': `Basic ${basic}`,
    });
    expect(tunnel.status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${other.url}/first`, auth(1))).status).toBe(403);
    const held = viaProxy(g.proxyUrl, `${other.url}/second`, auth(1));
    await waitFor(async () => (await api.get('/api/sessions/agent-2')).json.held === 1);
    before = await view(api);
    expect(before.sessions).toMatchObject([
      { id: 'agent-2', state: 'paused', counts: { network: 2 }, held: 1 },
      { id: 'agent-1', state: 'active', counts: { network: 1 }, held: 0 },
    ]);

    const roomAgain = fillDisk(g.journalPath);
    try {
      // agent-1's second unapproved request would pause it (and freeze its tunnel)
      for (const [url, i] of [
        [`${other.url}/second`, 0],
        [`${allowed.url}/ok`, 0],
        [`${allowed.url}/ok`, 1],
      ] as const) {
        const refused = await viaProxy(g.proxyUrl, url, auth(i));
        expect(refused.status, url).toBe(503);
        expect(refused.body).toMatch(/cannot write its journal/);
      }
      const ingest = await postAsAgent(`http://127.0.0.1:${g.gw.bridge.port}/events`, 'agent-1', {
        kind: 'command',
        target: '/etc',
      });
      expect(ingest.status).toBe(503);
      const bridge = await request(`http://127.0.0.1:${g.gw.bridge.port}/exec`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${AGENTS[0]?.token}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ cwd: '/etc' }),
      });
      expect(bridge.statusCode).toBe(503);
      await bridge.body.dump();
      const operator = [
        await api.post('/api/sessions/agent-1/approve', { pattern: 'b.test' }),
        await api.post('/api/approvals', { pattern: 'c.test' }),
        await api.post('/api/sessions/agent-2/resume', { reset: true }),
        await api.post('/api/sessions/agent-2/deny'),
      ];
      for (const answer of operator) {
        expect(answer.status).toBe(503);
        expect(answer.json.error.code).toBe('E_JOURNAL_WRITE');
        expect(answer.json.error.message).toMatch(/journal write failed: .*ENOSPC/);
      }
      expect(await view(api)).toEqual(before);
      // Not frozen: its session never paused.
      expect((await roundTrip(tunnel.socket, 'ping', (got) => got === 'ping')).got).toBe('ping');
    } finally {
      roomAgain();
    }
    expect(await view(api)).toEqual(before);
    expect(tunnel.socket.destroyed).toBe(false);
    tunnel.socket.destroy();
    await g.stop();
    gateways.splice(0);
    expect((await held).status).toBe(403);
  });

  it('a gateway started on the same journal afterwards shows the same view', async () => {
    const g = await startTestGateway(config, { dir });
    gateways.push(g);
    const after = await view(adminClient(g.gw.admin.port, ADMIN));
    expect(lasting(after)).toEqual(lasting(before));
    expect(after.details.find((d) => d.id === 'agent-2')?.pause.restored).toBe(true);
    // A PAUSE's event and pause records went out together, the pause naming the event.
    const records = g.records();
    const at = records.findIndex((r) => r.type === 'pause');
    const [event, pause] = [records[at - 1], records[at]];
    expect(event).toMatchObject({ type: 'event', verdict: 'PAUSE', session: 'agent-2' });
    expect(pause).toMatchObject({ seq: (event?.seq ?? 0) + 1, trigger: { seq: event?.seq } });
  });
});
