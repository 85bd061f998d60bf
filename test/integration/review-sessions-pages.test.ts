import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import { fileGateway } from '../helpers/file-gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * GET /api/sessions in pages: 600 configured agents (each one session, listed before it does
 * anything), a few flagged and paused through the proxy. Pages walked with `next` give every
 * session once in the list's order, filters and `total`/`counts` agree, a cursor stays valid
 * while sessions move, bad parameters are 400 naming the parameter, and `trajgate sessions`
 * follows `next` to list them all.
 */
const up = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const IDS = Array.from({ length: 600 }, (_, i) => `a${String(i).padStart(3, '0')}`);
const token = (id: string) => `${id}-token-0123456789abcdef`;
const RANK: Record<string, number> = { paused: 2, flagged: 1, active: 0 };

interface View {
  id: string;
  state: string;
  lastActivity: string | null;
}

let g: TestGateway;
let api: AdminClient;

/** One unapproved request: the first flags the session, the second pauses it. */
async function cross(id: string): Promise<void> {
  const res = await viaProxy(g.proxyUrl, `${up.url}/${id}`, agentAuth(id, token(id)));
  expect(res.status).toBe(403);
}

/** Every page from `query`, walked with `next` (bounded); `between` runs after each page. */
async function walk(query: string, between: (page: number) => Promise<void> = async () => {}) {
  const views: View[] = [];
  let next: string | null = null;
  for (let i = 0; i < 100; i++) {
    const cursor: string = next === null ? '' : `&cursor=${encodeURIComponent(next)}`;
    const res = await api.get(`/api/sessions?${query}${cursor}`);
    expect(res.status).toBe(200);
    views.push(...res.json.sessions);
    next = res.json.next;
    if (next === null) return views;
    await between(i);
  }
  throw new Error('the pages did not end');
}

beforeAll(async () => {
  g = await startTestGateway({
    agents: IDS.map((id) => ({ id, token: token(id) })),
    policy: { pause: 'block' },
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  api = adminClient(g.gw.admin.port, ADMIN);
  for (const id of ['a010', 'a011', 'a012', 'a013', 'a014']) await cross(id);
  for (const id of ['a020', 'a021', 'a022']) {
    await cross(id);
    await cross(id);
  }
});
afterAll(() => g.stop());

describe('GET /api/sessions pages', () => {
  it('no parameters: the first 100; pages walked with next: every session once, in order', async () => {
    const first = await api.get('/api/sessions');
    expect(first.json.sessions).toHaveLength(100);
    expect(first.json).toMatchObject({
      total: 600,
      counts: { paused: 3, flagged: 5, active: 592 },
      next: expect.any(String),
    });
    expect(Object.keys(first.json.sessions[0]).sort()).toEqual(
      ['counts', 'credentialNames', 'events', 'flagged', 'held', 'id', 'lastActivity', 'pausedAt']
        .concat(['pausedBy', 'pausedRule', 'state'])
        .sort(),
    );
    const views = await walk('limit=97');
    expect(views.map((v) => v.id).sort()).toEqual(IDS);
    expect(views.slice(0, 100)).toEqual(first.json.sessions);
    // Paused, flagged, active; each newest activity first, ties by id.
    for (let i = 1; i < views.length; i++) {
      const [a, b] = [views[i - 1]!, views[i]!];
      const order =
        RANK[a.state]! - RANK[b.state]! ||
        (a.lastActivity ?? '').localeCompare(b.lastActivity ?? '') ||
        b.id.localeCompare(a.id);
      expect(order, `${a.id} before ${b.id}`).toBeGreaterThan(0);
    }
    expect(views.slice(0, 8).map((v) => v.state)).toEqual([
      ...Array(3).fill('paused'),
      ...Array(5).fill('flagged'),
    ]);
  });

  it('filters by state (repeated or comma-separated) and agent; total counts the match', async () => {
    const paused = await api.get('/api/sessions?state=paused');
    expect(paused.json.sessions.map((v: View) => v.id).sort()).toEqual(['a020', 'a021', 'a022']);
    expect(paused.json).toMatchObject({ total: 3, next: null });
    const both = await walk('state=flagged,paused&limit=2');
    expect(both.map((v) => v.id)).toEqual(
      (await walk('state=paused&state=flagged&limit=3')).map((v) => v.id),
    );
    expect(both).toHaveLength(8);
    expect((await walk('state=active&limit=500')).every((v) => v.state === 'active')).toBe(true);
    const agent = await api.get('/api/sessions?agent=a013');
    expect(agent.json).toMatchObject({ total: 1, next: null, sessions: [{ id: 'a013' }] });
    expect(agent.json.sessions[0].state).toBe('flagged');
    expect((await api.get('/api/sessions?agent=a013&state=paused')).json).toMatchObject({
      total: 0,
      sessions: [],
    });
  });

  it('q finds sessions by part of their id, any case; total null; /metrics counts agree', async () => {
    const found = await walk('q=A02&limit=4');
    expect(found.map((v) => v.id)).toEqual([
      ...['a022', 'a021', 'a020'],
      ...IDS.filter((id) => /^a02[3-9]$/.test(id)),
    ]);
    const one = await api.get('/api/sessions?q=a02');
    expect(one.json).toMatchObject({ total: null, next: null });
    expect(one.json.counts).toEqual({ paused: 3, flagged: 5, active: 592 });
    const paused = await api.get('/api/sessions?q=02&state=paused');
    expect(paused.json.sessions.map((v: View) => v.id)).toEqual(['a022', 'a021', 'a020']);
    expect((await api.get('/api/sessions?q=zzz')).json).toMatchObject({ sessions: [] });
    const metrics = await api.get('/metrics');
    expect(metrics.text).toMatch(/^trajgate_paused_sessions 3$/m);
  });

  it('a cursor stays valid while sessions move between pages', async () => {
    const moved = ['a100', 'a101', 'a200'];
    const views = await walk('limit=50', async (page) => {
      if (page === 0) {
        await cross('a100'); // flagged: moves above the cursor
        await cross('a200');
        await cross('a200'); // paused
      }
      if (page === 3) await cross('a101');
    });
    const ids = views.map((v) => v.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => !moved.includes(id)).sort()).toEqual(
      IDS.filter((id) => !moved.includes(id)),
    );
    const counts = (await api.get('/api/sessions?limit=1')).json.counts;
    expect(counts).toEqual({ paused: 4, flagged: 7, active: 589 });
  });

  it.each([
    ['limit=0', 'query "limit" must be a whole number from 1 to 500, got "0"'],
    ['limit=501', 'query "limit" must be a whole number from 1 to 500, got "501"'],
    ['limit=all', 'query "limit" must be a whole number from 1 to 500, got "all"'],
    ['cursor=abc', 'query "cursor" is not a cursor this gateway gave'],
    ['state=running', 'query "state" must be active, flagged, paused'],
    ['agent=', 'query "agent" must name one agent'],
    ['order=id', 'query "order" is not known here'],
    ['q=', 'query "q" must be one text of 1 to 200 characters'],
    [`q=${'x'.repeat(201)}`, 'query "q" must be one text of 1 to 200 characters'],
    ['q=a&q=b', 'query "q" must be one text of 1 to 200 characters (part of a session id), got 2'],
  ])('%s → 400 E_BAD_FIELD naming the parameter', async (query, says) => {
    const res = await api.get(`/api/sessions?${query}`);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('E_BAD_FIELD');
    expect(res.json.error.message).toContain(says);
  });

  it('trajgate sessions --json lists every session, following next past 500', async () => {
    const run = await runCliAsync(
      ['sessions', '--json', '--admin', `http://127.0.0.1:${g.gw.admin.port}`],
      { cwd: tempDir(), env: { TRAJGATE_ADMIN_TOKEN: ADMIN } },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const listed = JSON.parse(run.stdout).sessions as View[];
    expect(listed.map((v) => v.id).sort()).toEqual(IDS);
    expect(listed.slice(0, 4).map((v) => v.state)).toEqual(Array(4).fill('paused'));
  });
});

describe('GET /api/sessions after a reload', () => {
  it('lists agents a reload adds; one removed leaves unless it did something', async () => {
    const agents = (ids: string[]) => ({
      agents: ids.map((id) => ({ id, token: token(id) })),
      network: { allowPrivate: ['127.0.0.1/32'] },
    });
    const f = await fileGateway(ADMIN, agents(['r1', 'r2', 'r3']));
    const client = adminClient(f.gw.admin.port, ADMIN);
    const ids = async () =>
      (await client.get('/api/sessions')).json.sessions.map((v: View) => v.id).sort();
    expect(await ids()).toEqual(['r1', 'r2', 'r3']);
    const res = await viaProxy(
      `http://127.0.0.1:${f.gw.proxy.port}`,
      `${up.url}/r2`,
      agentAuth('r2', token('r2')),
    );
    expect(res.status).toBe(403);
    f.write(agents(['r3', 'r4']));
    expect((await client.post('/api/reload', {})).status).toBe(200);
    expect(await ids()).toEqual(['r2', 'r3', 'r4']);
    expect((await client.get('/api/sessions')).json.counts).toEqual({
      paused: 0,
      flagged: 1,
      active: 2,
    });
  });
});
