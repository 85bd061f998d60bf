import { afterEach, describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import type { Replica } from '../helpers/redis-replicas.js';
import {
  agents,
  answerVia,
  startReplicas,
  stateRebuild,
  verdictOf,
} from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A Redis that hangs (SIGSTOP) keeps its connections open: health follows the commands'
 * answers, not only connection events, so each replica reports the store down within
 * `state.redis.timeout` (1 s here) and up again once it answers. A Redis restarted from an
 * older dump: each replica's view is the store's again (no pause shown that no longer holds).
 * Its keys flushed under live connections: down (came back empty) until a rebuild.
 */
const TIMEOUT_MS = 1_000;
const redis = await startRedis();
const stranger = await startUpstream();
const allowed = await startUpstream();
const replicas = (await startReplicas(redis, ['hung-a', 'hung-b'], {
  agents: agents(['hung', 'restored', 'flushed']),
  network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
})) as [Replica, Replica];
const [A, B] = replicas;

// Whatever a test does, Redis is not left stopped (the replicas' and the file's hooks would hang).
afterEach(() => redis.thaw());

/** The replica's store health and metric now. */
async function storeOf(r: Replica): Promise<{ up: boolean; status: string; metric: string }> {
  const health = (await r.api.get('/api/health')).json;
  const metric = /^trajgate_store_up (\d+)$/m.exec((await r.api.get('/metrics')).text)?.[1];
  return { up: health.store.up, status: health.status, metric: metric ?? 'missing' };
}

/** Waits until health, status and metric all say the replica's store is `up` (or down). */
function storeIs(r: Replica, up: boolean, what: string): Promise<void> {
  const want = up ? { up, status: 'ok', metric: '1' } : { up, status: 'degraded', metric: '0' };
  return waitFor(
    async () => {
      const s = await storeOf(r);
      return s.up === want.up && s.status === want.status && s.metric === want.metric;
    },
    10_000,
    `${r.name} reports the ${what} store ${up ? 'up' : 'down'}`,
  );
}

interface Listed {
  id: string;
  state: string;
  pausedAt: string | null;
  counts: Record<string, number>;
}

async function listed(r: Replica, id: string): Promise<Listed | undefined> {
  const sessions = (await r.api.get('/api/sessions')).json.sessions as Listed[];
  return sessions.find((s) => s.id === id);
}

describe('a hung Redis is down; a restored one is what every replica shows', () => {
  it('SIGSTOP: store.up false, degraded and trajgate_store_up 0 within the timeout; back after SIGCONT', async () => {
    expect((await answerVia(A, 'hung', `${allowed.url}/before`)).status).toBe(200);
    for (const r of replicas) {
      expect(await storeOf(r), r.name).toEqual({ up: true, status: 'ok', metric: '1' });
    }
    const frozenAt = Date.now();
    redis.freeze();
    try {
      const downAfter = await Promise.all(
        replicas.map(async (r) => {
          await storeIs(r, false, 'hung');
          return Date.now() - frozenAt;
        }),
      );
      // The timeout, then at most two probe intervals (250 ms each) and the polling's own time.
      for (const ms of downAfter) expect(ms).toBeLessThan(TIMEOUT_MS + 1_500);
      const health = (await B.api.get('/api/health')).json;
      expect(health.store.error).toMatch(/no answer within 1000 ms \(state\.redis\.timeout\)/);
      for (const r of replicas) {
        expect(r.child.stderr(), r.name).toMatch(
          /state store unix:\/\/\S+ does not answer \(no answer within 1000 ms/,
        );
      }
      // Decisions meanwhile fail closed.
      expect((await answerVia(A, 'hung', `${allowed.url}/hung`)).status).toBe(503);
    } finally {
      redis.thaw();
    }
    for (const r of replicas) await storeIs(r, true, 'thawed');
    expect((await answerVia(B, 'hung', `${allowed.url}/after`)).status).toBe(200);
    expect(allowed.seen.some((s) => s.url === '/hung')).toBe(false);
  });

  it('restarted from an older dump: no replica shows a pause the store no longer holds', async () => {
    expect((await answerVia(A, 'restored', `${allowed.url}/known`)).status).toBe(200);
    const backup = await redis.dump(); // the session known, counted nothing, not paused
    expect(verdictOf(await answerVia(A, 'restored', `${stranger.url}/1`))).toBe(
      'REVIEW; boundary=network',
    );
    expect(verdictOf(await answerVia(A, 'restored', `${stranger.url}/2`))).toBe(
      'PAUSE; boundary=network',
    );
    for (const r of replicas) {
      await waitFor(
        async () => (await listed(r, 'restored'))?.state === 'paused',
        10_000,
        `${r.name} shows the pause`,
      );
    }

    await redis.restore(backup);
    for (const r of replicas) {
      await waitFor(
        async () => (await listed(r, 'restored'))?.pausedAt === null,
        10_000,
        `${r.name} shows the restored state`,
      );
      const view = await listed(r, 'restored');
      expect(view?.state, r.name).not.toBe('paused');
      expect(view?.counts, r.name).toEqual({});
      expect((await r.api.get('/api/health')).json.store, r.name).toMatchObject({ up: true });
    }
    // Decisions follow the store too: the session is not paused there (pause: block would 403).
    expect((await answerVia(B, 'restored', `${allowed.url}/restored`)).status).toBe(200);
    expect(B.events('restored').at(-1)).toMatchObject({ verdict: 'ALLOW' });
  });

  it('keys flushed under live connections: every replica is down, idle or not, until a rebuild', async () => {
    expect(verdictOf(await answerVia(B, 'flushed', `${stranger.url}/1`))).toBe(
      'REVIEW; boundary=network',
    );
    expect(verdictOf(await answerVia(B, 'flushed', `${stranger.url}/2`))).toBe(
      'PAUSE; boundary=network',
    );
    const c = redis.client();
    await c.flushall();
    for (const r of replicas) {
      await storeIs(r, false, 'emptied');
      const health = (await r.api.get('/api/health')).json;
      expect(health.store.error, r.name).toMatch(/came back empty/);
    }
    // Not decided on as a new session: the pause is not forgotten.
    const refused = await answerVia(A, 'flushed', `${allowed.url}/flushed`);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatch(/state rebuild/);

    const rebuilt = await stateRebuild(
      replicas.map((r) => r.journal),
      A.config,
    );
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    for (const r of replicas) await storeIs(r, true, 'rebuilt');
    // The rebuild restored the pause (pause: block answers 403 at once).
    expect((await answerVia(A, 'flushed', `${allowed.url}/after-rebuild`)).status).toBe(403);
    expect(allowed.seen.some((s) => s.url === '/flushed' || s.url === '/after-rebuild')).toBe(
      false,
    );
  });
});
