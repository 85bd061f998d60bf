import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import { startRedis } from '../helpers/redis.js';
import {
  agents,
  allEvents,
  startReplicas,
  verdictOf,
  viaReplica,
} from '../helpers/redis-replicas.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Per-session linearisability across replicas: with the network boundary at
 * `reviewAt: 1, pauseAt: 2`, twenty simultaneous unapproved requests of one agent spread over
 * three replicas sharing one Redis are decided as in some serial order: exactly one REVIEW,
 * exactly one PAUSE, every other request held (here refused at once: `pause: block`), across
 * the three journals together. Run for ten agents, each a fresh session.
 */
const ROUNDS = 10;
const REQUESTS = 20;
const SESSIONS = Array.from({ length: ROUNDS }, (_, i) => `lin-${i + 1}`);

const redis = await startRedis();
const stranger = await startUpstream();
const replicas = await startReplicas(redis, ['lin-a', 'lin-b', 'lin-c'], {
  agents: agents(SESSIONS),
  network: { allowPrivate: ['127.0.0.1/32'] },
  policy: {
    pause: 'block',
    boundaries: { network: { kinds: ['network'], reviewAt: 1, pauseAt: 2 } },
  },
});

const pausesOf = (session: string): JournalRecord[] =>
  replicas.flatMap((r) => r.records()).filter((r) => r.type === 'pause' && r.session === session);

describe('per-session linearisability over three replicas', () => {
  it.each(SESSIONS)(
    '%s: twenty simultaneous unapproved requests → exactly one REVIEW, one PAUSE',
    async (session) => {
      const pending = Array.from({ length: REQUESTS }, (_, i) => {
        const replica = replicas[i % replicas.length]!;
        return viaReplica(replica.child.proxyPort, `${stranger.url}/${session}/${i}`, session);
      });
      const answers = await Promise.all(pending.map((p) => p.answer));
      expect(answers.map((a) => a.status)).toEqual(Array(REQUESTS).fill(403));
      const verdicts = answers.map(verdictOf);
      expect(verdicts.filter((v) => v === 'REVIEW; boundary=network')).toHaveLength(1);
      expect(verdicts.filter((v) => v.startsWith('PAUSE'))).toHaveLength(REQUESTS - 1);

      // Every answer was written before it was sent: the records are all there now.
      await waitFor(() => allEvents(replicas, session).length >= REQUESTS, 20_000, 'records');
      const events = allEvents(replicas, session);
      expect(events).toHaveLength(REQUESTS);
      const decided = events.filter((e) => e.held !== true);
      expect(decided.map((e) => [e.verdict, e.boundary, e.count]).sort()).toEqual([
        ['PAUSE', 'network', 2],
        ['REVIEW', 'network', 1],
      ]);
      expect(events.filter((e) => e.held === true)).toHaveLength(REQUESTS - 2);
      expect(pausesOf(session)).toHaveLength(1);
      // Spread over all three: each replica decided or held some of them.
      for (const r of replicas) expect(r.events(session).length).toBeGreaterThan(0);
    },
  );

  it('after the rounds every replica lists each session paused, counted twice', async () => {
    for (const r of replicas) {
      const res = await r.api.get('/api/sessions');
      expect(res.status).toBe(200);
      const listed = res.json.sessions as { id: string; state: string }[];
      for (const s of SESSIONS) {
        expect(listed.find((x) => x.id === s)?.state, `${r.name} lists ${s}`).toBe('paused');
      }
    }
  });
});
