import { afterEach, describe, expect, it } from 'vitest';
import { adminClient, agentAuth, lineCount, viaProxy } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, roundTrip } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import type { JournalRecord } from '../../src/journal/records.js';

/**
 * Approvals have ids and can be revoked (API and CLI): journaled, replayed
 * on restart, the next matching request refused, a tunnel it admitted closed. A config entry
 * or an unknown id is refused with a clear error and nothing changes. `approve --global`, and
 * `resume --reset` on an active session.
 */
const up = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = [
  { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' },
  { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
];
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);
const basic = (i: number) =>
  `Basic ${Buffer.from(`${AGENTS[i]!.id}:${AGENTS[i]!.token}`).toString('base64')}`;
const UP = `127.0.0.1:${up.port}`;
const cwd = tempDir();
const CONFIG = {
  agents: AGENTS,
  policy: { pause: 'block' },
  network: { allow: ['config.example'], allowPrivate: ['127.0.0.1/32'] },
  admin: { token: ADMIN },
};

const gateways: TestGateway[] = [];
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.stop();
});
async function start(dir = tempDir()): Promise<TestGateway> {
  const g = await startTestGateway(CONFIG, { dir });
  gateways.push(g);
  return g;
}
function op(g: TestGateway, args: string[]) {
  return runCliAsync([...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
    cwd,
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });
}
const of = <T extends JournalRecord['type']>(g: TestGateway, type: T) =>
  g.records().filter((r): r is Extract<JournalRecord, { type: T }> => r.type === type);

describe('revoking an approval', () => {
  it('DELETE /api/approvals/:id: journaled, its tunnel closed, the next request refused, still revoked after a restart', async () => {
    const dir = tempDir();
    const g = await start(dir);
    const api = adminClient(g.gw.admin.port, ADMIN);
    const { approval } = (await api.post('/api/sessions/agent-1/approve', { pattern: UP })).json;
    expect(approval.id).toMatch(/^a\d+$/);
    expect((await viaProxy(g.proxyUrl, `${up.url}/before`, auth(0))).status).toBe(200);

    // A blind tunnel the approval admitted: it works, then closes when the approval goes.
    const tunnel = await connectTunnel(g.gw.proxy.port, UP, { 'Proxy-Authorization': basic(0) });
    expect(tunnel.status).toBe(200);
    const inside = await roundTrip(tunnel.socket, `GET /in HTTP/1.1\r\nHost: ${UP}\r\n\r\n`, (t) =>
      t.includes('"/in"'),
    );
    expect(inside.got).toContain('200 OK');
    const closed = new Promise<void>((r) => tunnel.socket.once('close', () => r()));

    const revoke = await api.call('DELETE', `/api/approvals/${approval.id}`);
    expect(revoke.status).toBe(200);
    expect(revoke.json).toEqual({ revoked: approval, closed: 1 });
    await closed;
    const after = await viaProxy(g.proxyUrl, `${up.url}/after`, auth(0));
    expect(after.status).toBe(403);
    expect(after.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(up.seen.map((r) => r.url)).not.toContain('/after');
    expect(of(g, 'revoke')).toEqual([
      expect.objectContaining({
        id: approval.id,
        pattern: UP,
        kind: 'network',
        session: 'agent-1',
        by: 'operator',
      }),
    ]);
    expect(of(g, 'tunnel').at(-1)).toMatchObject({
      change: 'closed',
      target: UP,
      reason: `no approval or allowlist entry covers it any more (the approval ${approval.id} was revoked by operator)`,
    });
    // Revoked twice: it is gone.
    expect((await api.call('DELETE', `/api/approvals/${approval.id}`)).status).toBe(404);

    await g.stop();
    gateways.splice(0);
    const again = await start(dir);
    const api2 = adminClient(again.gw.admin.port, ADMIN);
    expect(
      (await api2.get('/api/approvals')).json.approvals.map((a: { id: string }) => a.id),
    ).toEqual(['c1']);
    expect((await viaProxy(again.proxyUrl, `${up.url}/restarted`, auth(0))).status).toBe(403);
  });

  it('trajgate approve prints the id, trajgate revoke ID revokes it: the next request is refused', async () => {
    const g = await start();
    const approved = await op(g, ['approve', 'agent-1', UP]);
    expect(approved.status).toBe(0);
    const id = /\(id (a\d+);/.exec(approved.stdout)?.[1] as string;
    expect(id).toBeDefined();
    expect((await viaProxy(g.proxyUrl, `${up.url}/ok`, auth(0))).status).toBe(200);
    const revoked = await op(g, ['revoke', id]);
    expect(revoked.stderr).toBe('');
    expect(revoked.stdout).toBe(`revoked ${id} (${UP} for agent-1)\n`);
    expect((await viaProxy(g.proxyUrl, `${up.url}/no`, auth(0))).status).toBe(403);
  });

  it('an unknown id is 404 E_UNKNOWN_APPROVAL and a config entry 409 E_CONFIG_APPROVAL; nothing changes', async () => {
    const g = await start();
    const api = adminClient(g.gw.admin.port, ADMIN);
    await api.post('/api/approvals', { pattern: 'op.example' });
    const lines = lineCount(g.journalPath);
    const listed = (await api.get('/api/approvals')).json.approvals;
    expect(listed.map((a: { id: string; source: string }) => [a.id, a.source])).toEqual([
      ['c1', 'network.allow'],
      [expect.stringMatching(/^a\d+$/), 'operator'],
    ]);

    const unknown = await api.call('DELETE', '/api/approvals/a999');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toEqual({
      code: 'E_UNKNOWN_APPROVAL',
      message:
        'no approval with id "a999" (revoked, expired or never made): GET /api/approvals lists the ids',
    });
    const config = await api.call('DELETE', '/api/approvals/c1');
    expect(config.status).toBe(409);
    expect(config.json.error.code).toBe('E_CONFIG_APPROVAL');
    expect(config.json.error.message).toBe(
      'c1 ("config.example") comes from the config (network.allow): edit the config to remove it; nothing was changed',
    );
    const cliUnknown = await op(g, ['revoke', 'a999']);
    expect(cliUnknown.status).toBe(1);
    expect(cliUnknown.stderr).toContain('404 no approval with id "a999"');
    const cliConfig = await op(g, ['revoke', 'c1']);
    expect(cliConfig.status).toBe(1);
    expect(cliConfig.stderr).toContain('edit the config to remove it');

    expect(lineCount(g.journalPath)).toBe(lines);
    expect((await api.get('/api/approvals')).json.approvals).toEqual(listed);
  });
});

describe('approve --global and resume --reset', () => {
  it('trajgate approve --global PATTERN approves it for every session', async () => {
    const g = await start();
    const res = await op(g, ['approve', '--global', UP, '--json']);
    expect(res.status).toBe(0);
    const { approval } = JSON.parse(res.stdout);
    expect(approval).toMatchObject({ pattern: UP, session: null, origin: 'operator' });
    expect((await viaProxy(g.proxyUrl, `${up.url}/one`, auth(0))).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${up.url}/two`, auth(1))).status).toBe(200);
    expect(of(g, 'approve')).toEqual([expect.objectContaining({ session: null, pattern: UP })]);
  });

  it('resume --reset on an active session resets its counts (journaled); a plain resume stays 409', async () => {
    const g = await start();
    const api = adminClient(g.gw.admin.port, ADMIN);
    expect((await viaProxy(g.proxyUrl, `${up.url}/x`, auth(0))).status).toBe(403);
    expect((await api.get('/api/sessions/agent-1')).json).toMatchObject({
      state: 'flagged',
      counts: { network: 1 },
    });
    const plain = await api.post('/api/sessions/agent-1/resume', {});
    expect(plain.status).toBe(409);
    expect(plain.json.error.message).toContain('`resume --reset`');

    const reset = await op(g, ['resume', 'agent-1', '--reset']);
    expect(reset.stdout).toBe(
      'resumed agent-1 with its counts reset; 0 held request(s) judged again\n',
    );
    expect((await api.get('/api/sessions/agent-1')).json).toMatchObject({
      state: 'active',
      counts: {},
      flagged: 0,
    });
    expect(of(g, 'resume')).toEqual([expect.objectContaining({ session: 'agent-1', reset: true })]);
    // counted from zero again: a REVIEW, not a PAUSE
    const next = await viaProxy(g.proxyUrl, `${up.url}/y`, auth(0));
    expect(next.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
  });
});
