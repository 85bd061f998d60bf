import { describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import type { Replica } from '../helpers/redis-replicas.js';
import {
  agents,
  answerVia,
  startReplica,
  startReplicas,
  verdictOf,
} from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A replica killed with `kill -9` under load: every request it answered 200 has its
 * decided event in its own journal, and a pause it decided holds on the other replicas and on
 * itself restarted (its state comes from Redis).
 */
const LOAD = ['load-1', 'load-2', 'load-3', 'load-4'];
const redis = await startRedis();
const stranger = await startUpstream();
const allowed = await startUpstream();
const [A, B, C] = (await startReplicas(redis, ['kill-a', 'kill-b', 'kill-c'], {
  agents: agents([...LOAD, 'killed-pause']),
  network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
})) as [Replica, Replica, Replica];

describe('a replica killed with kill -9 under load', () => {
  it('loses no decided event and no pause', async () => {
    const TOTAL = 400;
    let sent = 0;
    const oks: string[] = [];
    // Eight clients in a bounded loop on A, each until its first failure (A is gone).
    const worker = async (w: number) => {
      while (sent < TOTAL) {
        const path = `/load/${w}/${sent++}`;
        const res = await answerVia(A, LOAD[w % LOAD.length]!, `${allowed.url}${path}`);
        if (res.status !== 200) return;
        oks.push(path);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
    await waitFor(() => oks.length >= 50, 10_000, 'load under way');
    expect(verdictOf(await answerVia(A, 'killed-pause', `${stranger.url}/1`))).toMatch(/^REVIEW/);
    expect(verdictOf(await answerVia(A, 'killed-pause', `${stranger.url}/2`))).toMatch(/^PAUSE/);
    const killed = await A.child.kill('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    await load;
    expect(oks.length).toBeGreaterThanOrEqual(50);

    // Every request answered 200 has its ALLOW on record in A's journal.
    const targets = new Set(
      LOAD.flatMap((s) => A.events(s))
        .filter((e) => e.verdict === 'ALLOW')
        .map((e) => new URL(e.target).pathname),
    );
    expect(oks.filter((p) => !targets.has(p))).toEqual([]);

    // The pause A decided holds on B and C.
    for (const r of [B, C]) {
      expect((await answerVia(r, 'killed-pause', `${stranger.url}/after-kill`)).status).toBe(403);
      expect(r.events('killed-pause').at(-1), r.name).toMatchObject({ held: true });
    }
    // A restarted on the same journal takes its state from Redis: still paused.
    const again = await startReplica(A.name, A.config, A.journal);
    expect((await answerVia(again, 'killed-pause', `${stranger.url}/restarted`)).status).toBe(403);
    expect(again.events('killed-pause').at(-1)).toMatchObject({ held: true });
  });
});
