import { describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { oneAgentStage } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';

/** Approvals with a TTL: approved (and not counted) until they expire, counted again after. */
const { other, auth, start } = await oneAgentStage();

describe('approvals with a ttl', () => {
  it.each([
    { scope: 'session', path: '/api/sessions/agent-1/approve' },
    { scope: 'global', path: '/api/approvals' },
  ])(
    'a $scope approval with ttl 1s expires; the same target then counts: REVIEW, then PAUSE',
    async ({ path }) => {
      const [g, api] = await start({ policy: { holdTimeout: '20s' } });
      const pattern = `127.0.0.1:${other.port}`;
      const added = Date.now();
      const approve = await api.post(path, { pattern, ttl: '1s' });
      expect(approve.status).toBe(201);
      const expiresAt = Date.parse(approve.json.approval.expiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(added + 1_000);
      expect(expiresAt).toBeLessThan(Date.now() + 1_100);

      const during = await viaProxy(g.proxyUrl, `${other.url}/during`, auth);
      expect(during.status).toBe(200);
      const listed = await api.get('/api/sessions/agent-1');
      expect(listed.json.approvals).toContainEqual(approve.json.approval);
      expect(listed.json.counts).toEqual({});

      // wait it out, bounded: the approval leaves the list once expired
      await waitFor(
        async () =>
          !(await api.get('/api/sessions/agent-1')).json.approvals.some(
            (a: { pattern: string }) => a.pattern === pattern,
          ),
        3_000,
      );
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);

      const after = await viaProxy(g.proxyUrl, `${other.url}/after`, auth);
      expect(after.status).toBe(403);
      expect(after.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
      const again = viaProxy(g.proxyUrl, `${other.url}/again`, auth);
      await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
      const detail = await api.get('/api/sessions/agent-1');
      expect(detail.json).toMatchObject({ state: 'paused', counts: { network: 2 } });
      expect((await api.post('/api/sessions/agent-1/deny')).status).toBe(200);
      expect((await again).status).toBe(403);
      expect(other.seen.map((r) => r.url)).not.toContain('/after');

      const events = g.records().filter((r) => r.type === 'event');
      expect(events.map((r) => [r.target.slice(-6), r.verdict, r.approved, r.count])).toEqual([
        ['during', 'ALLOW', true, 0],
        ['/after', 'REVIEW', false, 1],
        ['/again', 'PAUSE', false, 2],
      ]);
      expect(events[0]).toMatchObject({ approvedBy: pattern });
    },
  );

  it('GET /api/approvals lists a session approval whose session has crossed nothing yet', async () => {
    const [, api] = await start();
    const approve = await api.post('/api/sessions/agent-1/approve', { pattern: 'pkg.example' });
    expect(approve.status).toBe(201);
    expect((await api.get('/api/sessions/agent-1')).json.approvals).toContainEqual(
      approve.json.approval,
    );
    // Approvals of sessions that never crossed a boundary are listed too.
    expect((await api.get('/api/approvals')).json.approvals).toContainEqual(approve.json.approval);
  });
});
