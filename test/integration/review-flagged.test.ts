import { afterEach, describe, expect, it } from 'vitest';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * A session with a REVIEW since the last operator action on it is `flagged`
 * in GET /api/sessions and `trajgate sessions`; its detail lists those REVIEWs; an operator
 * action on it (approve, block, resume, deny) clears it; a restart rebuilds it from the journal.
 */
const up = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = ['agent-1', 'agent-2', 'agent-3'].map((id) => ({
  id,
  token: `${id}-token-0123456789abcdef`,
}));
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);
const CONFIG = {
  agents: AGENTS,
  policy: { pause: 'block' },
  network: { allowPrivate: ['127.0.0.1/32'] },
  admin: { token: ADMIN },
};

const gateways: TestGateway[] = [];
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.stop();
});

type View = { id: string; state: string; flagged: number };
const states = (sessions: View[]) => sessions.map((s) => [s.id, s.state, s.flagged]);

describe('flagged sessions', () => {
  it('a REVIEW flags the session until an operator acts on it; the flag survives a restart', async () => {
    const dir = tempDir();
    let g = await startTestGateway(CONFIG, { dir });
    gateways.push(g);
    let api = adminClient(g.gw.admin.port, ADMIN);
    // agent-1: two REVIEWs would pause; one REVIEW each for agent-1 and agent-2, two for agent-3
    expect((await viaProxy(g.proxyUrl, `${up.url}/a`, auth(0))).status).toBe(403);
    expect((await viaProxy(g.proxyUrl, `${up.url}/b`, auth(1))).status).toBe(403);
    expect((await viaProxy(g.proxyUrl, `${up.url}/c`, auth(2))).status).toBe(403);
    expect((await viaProxy(g.proxyUrl, `${up.url}/d`, auth(2))).status).toBe(403);

    const list = (await api.get('/api/sessions')).json.sessions as View[];
    // paused first, then flagged, then the rest
    expect(states(list)).toEqual([
      ['agent-3', 'paused', 1],
      ['agent-2', 'flagged', 1],
      ['agent-1', 'flagged', 1],
    ]);
    const detail = (await api.get('/api/sessions/agent-2')).json;
    expect(detail.reviews).toEqual([
      expect.objectContaining({ verdict: 'REVIEW', target: `${up.url}/b`, session: 'agent-2' }),
    ]);

    const table = await runCliAsync(
      ['sessions', '--admin', `http://127.0.0.1:${g.gw.admin.port}`],
      {
        env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
      },
    );
    expect(table.stdout).toMatch(/^agent-2\s+FLAGGED \(1 review\)\s+network=1/m);
    expect(table.stdout).toMatch(/^agent-3\s+PAUSED \(network\)/m);

    // an approval for agent-1 answers its REVIEW; a global approval answers no one's
    await api.post('/api/sessions/agent-1/approve', { pattern: 'x.example' });
    await api.post('/api/approvals', { pattern: 'y.example' });
    expect(states((await api.get('/api/sessions')).json.sessions)).toEqual([
      ['agent-3', 'paused', 1],
      ['agent-2', 'flagged', 1],
      ['agent-1', 'active', 0],
    ]);
    expect((await api.get('/api/sessions/agent-1')).json.reviews).toEqual([]);
    const before = (await api.get('/api/sessions')).json.sessions;
    const reviewsBefore = (await api.get('/api/sessions/agent-2')).json.reviews;

    await g.stop();
    gateways.splice(0);
    g = await startTestGateway(CONFIG, { dir });
    gateways.push(g);
    api = adminClient(g.gw.admin.port, ADMIN);
    expect((await api.get('/api/sessions')).json.sessions).toEqual(before);
    expect((await api.get('/api/sessions/agent-2')).json.reviews).toEqual(reviewsBefore);

    // deny on the paused one and a deny pattern on the flagged one clear theirs
    await api.post('/api/sessions/agent-3/deny');
    expect((await api.post('/api/sessions/agent-2/denies', { pattern: 'z.example' })).status).toBe(
      201,
    );
    expect(states((await api.get('/api/sessions')).json.sessions)).toEqual([
      ['agent-3', 'paused', 0],
      ['agent-2', 'active', 0],
      ['agent-1', 'active', 0],
    ]);
  });
});
