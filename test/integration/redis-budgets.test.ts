import { describe, expect, it } from 'vitest';
import type { BudgetView } from '../../src/wire.js';
import { startRedis } from '../helpers/redis.js';
import type { Replica } from '../helpers/redis-replicas.js';
import { agents, startReplicas, viaReplica } from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A budget shared by two replicas on one Redis: requests through either count toward one
 * budget; the one past it pauses the session on both; a top-up on the other replica's API lets
 * the held request go there, and the next request on either, past the new limit, pauses it.
 */
const redis = await startRedis();
const upstream = await startUpstream();
const [A, B] = (await startReplicas(redis, ['budget-a', 'budget-b'], {
  agents: agents(['agent-1']),
  network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'hold', budgets: [{ name: 'calls', requests: 2, within: '1h' }] },
})) as [Replica, Replica];

const get = (r: Replica, path: string) =>
  viaReplica(r.child.proxyPort, `${upstream.url}${path}`, 'agent-1');
const budget = async (r: Replica) =>
  ((await r.api.get('/api/sessions/agent-1')).json.budgets as BudgetView[])[0] as BudgetView;

describe('a budget across replicas', () => {
  it('counts on both, pauses on both, and a top-up on one releases the other', async () => {
    expect((await get(A, '/1').answer).status).toBe(200);
    expect((await get(B, '/2').answer).status).toBe(200);
    const held = get(A, '/3');
    await waitFor(() => A.records().some((r) => r.type === 'pause'), 10_000, 'the pause on A');
    await waitFor(
      async () => (await B.api.get('/api/sessions/agent-1')).json.state === 'paused',
      10_000,
      'B sees the pause',
    );
    const topped = await B.api.post('/api/sessions/agent-1/topup', { budget: 'calls', amount: 1 });
    expect(topped.status).toBe(200);
    expect(topped.json.resumed).toBe(true);
    expect((await held.answer).status).toBe(200);
    await waitFor(async () => (await budget(A)).used === 3, 10_000, 'A counts the released one');
    expect(await budget(A)).toMatchObject({ limit: 3, toppedUp: 1 });
    // B's decision takes the session's state from the store: the new limit, reached.
    const again = get(B, '/4');
    await waitFor(() => B.records().some((r) => r.type === 'pause'), 10_000, 'the pause on B');
    expect(B.records().find((r) => r.type === 'pause')).toMatchObject({
      boundary: 'budget',
      trigger: { rule: { name: 'calls' } },
    });
    expect(A.records().find((r) => r.type === 'pause')).toMatchObject({ boundary: 'budget' });
    await A.api.post('/api/sessions/agent-1/deny');
    expect((await again.answer).status).toBe(403);
    for (const r of [A, B]) await r.child.kill('SIGTERM');
  });
});
