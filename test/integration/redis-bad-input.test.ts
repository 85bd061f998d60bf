import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempConfig } from '../helpers/child-gateway.js';
import { startRedis } from '../helpers/redis.js';
import type { Replica, ProxyAnswer } from '../helpers/redis-replicas.js';
import {
  ADMIN_TOKEN,
  agents,
  startReplica,
  startReplicas,
  viaReplica,
} from '../helpers/redis-replicas.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Bad input with shared state, end to end: a Redis URL where nothing listens, a
 * shared record that is not what trajgate wrote, a Redis that answers with an error. Each: a
 * clear error naming what and where, decisions fail closed, and what was decided stays in the
 * replica's journal.
 */
const SESSIONS = ['fine', 'corrupt', 'noauth'];
const redis = await startRedis();
const allowed = await startUpstream();
const stranger = await startUpstream();
const config = {
  agents: agents(SESSIONS),
  network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
};
const [A] = (await startReplicas(redis, ['bad-a'], config)) as [Replica];

const ask = (r: Replica, session: string, path: string): Promise<ProxyAnswer> =>
  viaReplica(r.child.proxyPort, `${allowed.url}${path}`, session).answer;

describe('shared state: bad input', () => {
  it('a Redis URL where nothing listens: it starts, says so naming the URL, and refuses 503', async () => {
    const url = `unix://${join(tempDir(), 'nothing.sock')}`;
    const files = tempConfig({
      ...config,
      admin: { token: ADMIN_TOKEN },
      state: { store: 'redis', redis: { url, replica: 'lonely', timeout: '500ms' } },
    });
    const lonely = await startReplica('lonely', files.config, files.journal);
    await waitFor(() => lonely.child.banner.includes(url), 20_000, 'the banner names the URL');
    const res = await ask(lonely, 'fine', '/lonely');
    expect(res.status).toBe(503);
    expect(res.body).toContain(url);
    expect(allowed.seen.some((s) => s.url === '/lonely')).toBe(false);
    expect((await lonely.api.get('/api/health')).json.store).toMatchObject({ up: false });
    await lonely.child.kill('SIGTERM');
  });

  it('a corrupted shared record: that session fails closed naming the key, others are decided', async () => {
    expect((await ask(A, 'corrupt', '/before')).status).toBe(200);
    const client = redis.client();
    await client.set('trajgate-test:s:corrupt', '{"v":"x","state":[]}');
    const mine = () => A.records().filter((r) => 'session' in r && r.session === 'corrupt');
    const before = mine().length;
    const res = await ask(A, 'corrupt', '/after');
    expect(res.status).toBe(503);
    expect(res.body).toContain('trajgate-test:s:corrupt');
    expect(allowed.seen.some((s) => s.url === '/after')).toBe(false);
    expect((await ask(A, 'fine', '/other')).status).toBe(200);
    // The refusal is on record in the replica's journal.
    await waitFor(() => mine().length > before, 20_000, 'the refusal journaled');
  });

  it('a Redis that answers with an error: refused 503 with its answer, recovered once fixed', async () => {
    const client = redis.client();
    // Over its memory limit with no eviction, Redis answers writes with an OOM error.
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    // A decision that counts writes (one that changes nothing only reads, and goes on).
    const counted = (path: string) =>
      viaReplica(A.child.proxyPort, `${stranger.url}${path}`, 'noauth').answer;
    try {
      const res = await counted('/oom');
      expect(res.status).toBe(503);
      expect(res.body).toMatch(/OOM/);
      expect((await ask(A, 'noauth', '/read-only')).status).toBe(200);
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    expect(stranger.seen).toEqual([]);
    // Written again: the unapproved request is counted and refused as a REVIEW.
    await waitFor(async () => (await counted('/fixed')).status === 403, 10_000, 'decided again');
  });
});
