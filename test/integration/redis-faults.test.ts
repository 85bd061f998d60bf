import { describe, expect, it } from 'vitest';
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
 * Faults with shared state: Redis hung (decisions fail closed, then recover by
 * themselves), killed (fail closed, journaled locally; admin actions say the store is down),
 * restarted empty (still refused: `trajgate state rebuild` restores counts and pauses from the
 * replicas' journals, then decisions resume). A replica killed with `kill -9`: redis-kill.test.ts.
 */
const SESSIONS = ['was-paused', 'was-counted', 'op-paused', 'in-outage', 'after'];
const redis = await startRedis();
const stranger = await startUpstream();
const allowed = await startUpstream();
const replicas = (await startReplicas(redis, ['fault-a', 'fault-b', 'fault-c'], {
  agents: agents(SESSIONS),
  network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
})) as [Replica, Replica, Replica];
const [A, B, C] = replicas;

describe('Redis hung, killed and restarted empty', () => {
  it('a hung Redis: decisions fail closed with 503, and resume by themselves once it answers', async () => {
    redis.freeze();
    try {
      const res = await answerVia(A, 'in-outage', `${allowed.url}/hung`);
      expect(res.status).toBe(503);
      expect(res.body).toMatch(/trajgate cannot reach its state store/);
    } finally {
      redis.thaw();
    }
    await waitFor(
      async () => (await answerVia(A, 'after', `${allowed.url}/thawed`)).status === 200,
      10_000,
      'A decides again',
    );
    expect(allowed.seen.some((s) => s.url === '/hung')).toBe(false);
  });

  it('Redis killed: 503 with a one-line reason, journaled locally; admin actions answer E_STORE_DOWN', async () => {
    // Before the outage: pauses decided on A, one crossing counted on B.
    for (const n of [1, 2]) await answerVia(A, 'op-paused', `${stranger.url}/${n}`);
    expect(verdictOf(await answerVia(A, 'was-paused', `${stranger.url}/1`))).toBe(
      'REVIEW; boundary=network',
    );
    expect(verdictOf(await answerVia(A, 'was-paused', `${stranger.url}/2`))).toBe(
      'PAUSE; boundary=network',
    );
    expect(verdictOf(await answerVia(B, 'was-counted', `${stranger.url}/1`))).toBe(
      'REVIEW; boundary=network',
    );

    await redis.kill();
    // At once: an action the store cannot take is refused, not journaled and kept locally.
    const resume = await C.api.post('/api/sessions/op-paused/resume', {});
    expect(resume.status, resume.text).toBe(503);
    expect(resume.json.error.code).toBe('E_STORE_DOWN');
    const approve = await B.api.post('/api/approvals', { pattern: `127.0.0.1:${stranger.port}` });
    expect(approve.status, approve.text).toBe(503);
    expect(approve.json.error.code).toBe('E_STORE_DOWN');
    for (const r of replicas) {
      const before = r.records().length;
      const res = await answerVia(r, 'in-outage', `${allowed.url}/${r.name}`);
      expect(res.status, r.name).toBe(503);
      expect(res.body.trim().split('\n'), r.name).toHaveLength(1);
      expect(res.body, r.name).toMatch(/trajgate cannot reach its state store/);
      await waitFor(
        () =>
          r
            .records()
            .slice(before)
            .some((x) => 'session' in x && x.session === 'in-outage'),
        5_000,
        `${r.name} journaled the refusal`,
      );
    }
    expect(allowed.seen.some((s) => s.url.startsWith('/fault-'))).toBe(false);
    expect(C.records().some((r) => r.type === 'resume')).toBe(false);
    const health = await B.api.get('/api/health');
    expect(health.json.store).toMatchObject({ up: false });
  });

  it('restarted empty: refused until `state rebuild`, which restores counts and pauses', async () => {
    await redis.start(); // same socket, empty
    // Deciding on an empty store would forget every pause: still refused, naming the fix.
    await waitFor(
      async () => /state rebuild/.test((await answerVia(A, 'after', `${allowed.url}/empty`)).body),
      10_000,
      'A names the rebuild',
    );
    expect((await answerVia(B, 'was-paused', `${stranger.url}/empty`)).status).toBe(503);

    const rebuilt = await stateRebuild(
      replicas.map((r) => r.journal),
      A.config,
    );
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    for (const r of replicas) {
      await waitFor(
        async () => (await answerVia(r, 'after', `${allowed.url}/back`)).status === 200,
        10_000,
        `${r.name} decides again`,
      );
    }
    expect((await A.api.get('/api/health')).json.store).toMatchObject({ up: true });
    // The pause decided on A before the outage holds on B again (refused at once: pause block).
    const held = await answerVia(B, 'was-paused', `${stranger.url}/3`);
    expect(held.status).toBe(403);
    expect(B.events('was-paused').at(-1)).toMatchObject({ held: true });
    // The crossing counted on B before the outage counts on C: this one is the second.
    const second = await answerVia(C, 'was-counted', `${stranger.url}/2`);
    expect(verdictOf(second)).toBe('PAUSE; boundary=network');
    expect(C.events('was-counted').at(-1)).toMatchObject({ verdict: 'PAUSE', count: 2 });
    const listed = (await A.api.get('/api/sessions')).json.sessions as {
      id: string;
      state: string;
    }[];
    expect(listed.find((s) => s.id === 'was-paused')?.state).toBe('paused');
  });
});
