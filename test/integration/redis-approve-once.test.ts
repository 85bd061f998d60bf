import { describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import type { Replica } from '../helpers/redis-replicas.js';
import { agents, startReplicas, viaReplica } from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Approve once across gateways sharing one Redis: request ids are each
 * gateway's own journal seqs, so an approve-once names the gateway whose rids it lists. The
 * session stays paused everywhere; a request held elsewhere, though its rid is the same, stays
 * held there (never forwarded as approved, not judged again) until a deny or a resume.
 */
const redis = await startRedis();
const stranger = await startUpstream();
const [A, B] = (await startReplicas(redis, ['once-a', 'once-b'], {
  agents: agents(['once-1']),
  network: { allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'hold', holdTimeout: '30s' },
})) as [Replica, Replica];

const get = (r: Replica, path: string) =>
  viaReplica(r.child.proxyPort, `${stranger.url}${path}`, 'once-1');
const reached = (path: string) => stranger.seen.some((s) => s.url === path);

describe('approve once across replicas', () => {
  it("approves the named request on its own gateway only; another's held request stays held", async () => {
    expect((await get(A, '/first').answer).status).toBe(403);
    const onA = get(A, '/pausing');
    await waitFor(() => A.records().some((r) => r.type === 'pause'), 20_000, 'A paused');
    const held = (await A.api.get('/api/sessions/once-1')).json.heldRequests as { rid: number }[];
    expect(held).toHaveLength(1);
    const rid = held[0]!.rid;
    // B's request is to have the same rid: refusals (unknown credentials) fill B's seqs first.
    while (B.records().length < rid - 1) {
      const n = B.records().length;
      expect(
        (await viaReplica(B.child.proxyPort, `${stranger.url}/x`, 'nobody').answer).status,
      ).toBe(407);
      await waitFor(() => B.records().length > n, 20_000, 'B journaled the refusal');
    }
    const onB = get(B, '/on-b');
    await waitFor(() => B.events('once-1').some((e) => e.held === true), 20_000, 'B holds');
    const heldOnB = (await B.api.get('/api/sessions/once-1')).json.heldRequests as {
      rid: number;
    }[];
    expect(heldOnB.map((h) => h.rid)).toEqual([rid]);

    const r = await A.api.post('/api/sessions/once-1/resume', { once: [rid] });
    expect(r.status).toBe(200);
    expect((await onA.answer).status).toBe(200);
    expect(reached('/pausing')).toBe(true);
    const [resume] = A.records().filter((x) => x.type === 'resume');
    expect(resume).toMatchObject({ once: [rid], onceAt: 'once-a' });
    expect((await A.api.get('/api/sessions/once-1')).json).toMatchObject({
      state: 'paused',
      held: 0,
    });

    // A's deny reaches B after its approve-once (the bus keeps their order): B's request was
    // held until the deny, then answered 403 — never forwarded, never judged again.
    expect(onB.settled()).toBe(false);
    expect((await A.api.post('/api/sessions/once-1/deny', {})).status).toBe(200);
    expect((await onB.answer).status).toBe(403);
    expect(reached('/on-b')).toBe(false);
    const onBEvents = B.events('once-1').filter((e) => e.target.endsWith('/on-b'));
    expect(onBEvents.map((e) => [e.seq, e.held, e.approved])).toEqual([[rid, true, false]]);
    expect((await B.api.get('/api/sessions/once-1')).json.state).toBe('paused');
    expect([A, B].map((x) => x.records().filter((r) => r.type === 'pause').length)).toEqual([1, 0]);
  });
});
