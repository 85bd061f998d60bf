import { afterAll, describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import type { Replica } from '../helpers/redis-replicas.js';
import { agents, answerVia, startReplicas } from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Operators' deny patterns across replicas sharing one Redis: one added on A refuses on B, and
 * one an older gateway shared under its old record type (`block`, in the store's rules or on
 * the bus) applies as a `deny-pattern` does; what a gateway shares is spelled `block` until the
 * next minor version, so that an older replica in a rolling upgrade applies it too.
 */
const PREFIX = 'trajgate-test:';
const redis = await startRedis();
const up = await startUpstream();
const [A, B] = (await startReplicas(redis, ['deny-a', 'deny-b'], {
  agents: agents(['s1', 's2', 's3']),
  network: { allow: [`127.0.0.1:${up.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
})) as [Replica, Replica];
const client = redis.client();
afterAll(() => client.quit());

/** What an older gateway shared for an operator's deny pattern. */
const oldRecord = (seq: number, session: string | null, path: string) => ({
  seq,
  ts: new Date().toISOString(),
  type: 'block',
  id: `d${seq}.deny-old`,
  session,
  pattern: `GET ${up.url}${path}`,
  by: 'operator',
});
const saveRule = (rule: { id: string }) =>
  client
    .multi()
    .hset(`${PREFIX}rules`, rule.id, JSON.stringify(rule))
    .incr(`${PREFIX}rules:v`)
    .exec();
const listed = async (r: Replica, id: string) =>
  ((await r.api.get('/api/denies')).json.denies as { id: string }[]).some((d) => d.id === id);

describe('deny patterns across replicas', () => {
  it('one added on A (POST /api/sessions/:id/denies) refuses on B', async () => {
    const added = await A.api.post('/api/sessions/s1/denies', { pattern: `GET ${up.url}/a/` });
    expect(added.status).toBe(201);
    expect(A.records().filter((r) => r.type === 'deny-pattern')).toHaveLength(1);
    const refused = await answerVia(B, 's1', `${up.url}/a/x`);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(`(${added.json.deny.id as string})`);
    expect((await answerVia(B, 's2', `${up.url}/a/x`)).status).toBe(200);
    // Shared in the spelling an older replica reads, so a rolling upgrade applies it there too.
    const stored = await client.hget(`${PREFIX}rules`, added.json.deny.id as string);
    expect(JSON.parse(stored ?? '{}')).toMatchObject({
      type: 'block',
      pattern: `GET ${up.url}/a/`,
    });
  });

  it("an older gateway's block rule in the store applies at the next decision", async () => {
    const rule = oldRecord(900, null, '/b/');
    await saveRule(rule);
    const refused = await answerVia(B, 's2', `${up.url}/b/x`);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(`(${rule.id})`);
    expect(await listed(B, rule.id)).toBe(true);
  });

  it("an older gateway's block record on the bus applies on every replica", async () => {
    // As that gateway shared it: in the store's rules, then on the bus. Listed before any
    // decision reads the rules again: the bus message applied it.
    const record = oldRecord(901, 's3', '/c/');
    await saveRule(record);
    await client.publish(`${PREFIX}bus`, `deny-old\n${JSON.stringify(record)}`);
    for (const r of [A, B]) {
      await waitFor(() => listed(r, record.id), 10_000, `${r.name} lists ${record.id}`);
    }
    for (const r of [A, B]) expect((await answerVia(r, 's3', `${up.url}/c/x`)).status).toBe(403);
  });
});
