import { describe, expect, it } from 'vitest';
import { adminClient, generatedToken, viaProxy } from '../helpers/admin.js';
import { ADMIN, ALICE, auth, reviewStage } from '../helpers/review-story.js';
import type { EventRecord } from '../../src/journal/records.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The seed story driven through the admin API: a session is paused through the real proxy
 * (curl), an operator reads the pause record and events over HTTP, then approves and resumes
 * or denies. Loopback only: `allowed` is allowlisted, `other` is not.
 */
const { allowed, other, start, pause } = await reviewStage();

describe('the seed story through the admin API', () => {
  it('pause → list → detail → events → approve + resume releases both held requests', async () => {
    const [g, api] = await start();
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/ok`, auth(0))).status).toBe(200);
    const { held } = await pause(g, api, 0);

    const list = await api.get('/api/sessions');
    expect(list.status).toBe(200);
    expect(list.json.sessions.map((s: { id: string }) => s.id)).toEqual(['agent-1', 'agent-2']);
    expect(list.json.sessions[0]).toMatchObject({
      id: 'agent-1',
      state: 'paused',
      counts: { network: 2 },
      pausedBy: 'network',
      held: 1,
      events: 3,
    });
    expect(Date.parse(list.json.sessions[0].pausedAt)).toBeGreaterThan(Date.now() - 10_000);
    expect(list.json.sessions[1]).toMatchObject({ state: 'active', held: 0, pausedAt: null });

    const detail = await api.get('/api/sessions/agent-1');
    expect(detail.status).toBe(200);
    const { pause: record, heldRequests } = detail.json;
    expect(record).toMatchObject({ session: 'agent-1', boundary: 'network', count: 2 });
    expect(record.restored).toBe(false);
    expect(record.trigger).toMatchObject({ verdict: 'PAUSE', target: `${other.url}/second-0` });
    const recent = record.recent as EventRecord[];
    expect(recent.map((e) => [e.verdict, e.target])).toEqual([
      ['ALLOW', `${allowed.url}/ok`],
      ['REVIEW', `${other.url}/first-0`],
      ['PAUSE', `${other.url}/second-0`],
    ]);
    const seqs = recent.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(recent.at(-1)?.seq).toBe(record.trigger.seq);
    expect(heldRequests).toHaveLength(1);
    expect(heldRequests[0].what).toBe(`GET ${other.url}/second-0`);
    expect(heldRequests[0].waitedMs).toBeGreaterThanOrEqual(0);
    expect(heldRequests[0].timeoutInMs).toBeGreaterThan(10_000);
    expect(heldRequests[0].timeoutInMs).toBeLessThanOrEqual(20_000);

    // events, newest first, with a cursor
    const page1 = await api.get('/api/sessions/agent-1/events?limit=2');
    expect(page1.json.events.map((e: EventRecord) => e.verdict)).toEqual(['PAUSE', 'REVIEW']);
    expect(page1.json.events[0].seq).toBeGreaterThan(page1.json.events[1].seq);
    expect(page1.json.next).toBe(page1.json.events[1].seq);
    const page2 = await api.get(`/api/sessions/agent-1/events?limit=2&before=${page1.json.next}`);
    expect(page2.json.events.map((e: EventRecord) => e.target)).toEqual([`${allowed.url}/ok`]);
    expect(page2.json.next).toBeNull();

    // a request arriving while paused is held too
    const later = viaProxy(g.proxyUrl, `${allowed.url}/while-paused`, auth(0));
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 2);

    const approve = await api.post('/api/sessions/agent-1/approve', {
      pattern: `127.0.0.1:${other.port}`,
    });
    expect(approve.status).toBe(201);
    expect(approve.json.approval).toEqual({
      id: expect.stringMatching(/^a\d+$/),
      pattern: `127.0.0.1:${other.port}`,
      kind: 'network',
      session: 'agent-1',
      expiresAt: null,
      origin: 'operator',
      source: 'operator',
      by: 'operator',
    });
    const resume = await api.post('/api/sessions/agent-1/resume');
    expect(resume.status).toBe(200);
    expect(resume.json).toEqual({ resumed: true, released: 2, pausedAgain: null });
    const [a, b] = await Promise.all([held, later]);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body).url).toBe('/second-0');
    expect(b.status).toBe(200);
    expect(other.seen.map((r) => r.url)).toContain('/second-0');

    const after = await api.get('/api/sessions/agent-1');
    expect(after.json).toMatchObject({ state: 'active', held: 0, pause: null });
    expect(after.json.counts).toEqual({ network: 2 }); // kept, not reset
    const ops = g.records().filter((r) => r.type === 'approve' || r.type === 'resume');
    expect(ops.map((r) => [r.type, (r as { by: string }).by])).toEqual([
      ['approve', 'operator'],
      ['resume', 'operator'],
    ]);
    for (const r of ops) expect(Date.parse(r.ts)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('deny answers the held request 403 at once; the session stays paused; `by` is the token name', async () => {
    const [g, api] = await start();
    const { held } = await pause(g, api, 1);
    const alice = adminClient(api.port, ALICE);
    const started = Date.now();
    const deny = await alice.post('/api/sessions/agent-2/deny');
    expect(deny.status).toBe(200);
    expect(deny.json).toEqual({ denied: true, released: 1 });
    const answer = await held;
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(answer.status).toBe(403);
    expect(answer.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    expect(answer.body).toContain('An operator reviewed the recent events and denied it');
    const detail = await api.get('/api/sessions/agent-2');
    expect(detail.json).toMatchObject({ state: 'paused', held: 0, heldRequests: [] });
    expect(detail.json.pause).toMatchObject({ session: 'agent-2', boundary: 'network' });
    const approve = await alice.post('/api/approvals', { pattern: 'pkg.example', ttl: '1h' });
    expect(approve.status).toBe(201);
    expect(approve.json.approval.session).toBeNull();
    const deny2 = g.records().find((r) => r.type === 'deny');
    expect(deny2).toMatchObject({ session: 'agent-2', by: 'alice', released: 1 });
    expect(g.records().find((r) => r.type === 'approve')).toMatchObject({
      session: null,
      pattern: 'pkg.example',
      by: 'alice',
    });
    expect(other.seen.map((r) => r.url)).not.toContain('/second-1');
  });

  it('a generated token (no admin.token) is kept 0600 in the data folder and works', async () => {
    const [g] = await start({ admin: {} });
    const file = g.gw.adminTokenFile as string;
    const { statSync } = await import('node:fs');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const api = adminClient(g.gw.admin.port, generatedToken(file));
    expect((await api.get('/api/sessions')).status).toBe(200);
    expect((await api.get('/api/sessions', { token: ADMIN })).status).toBe(401);
  });
});
