import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { adminClient, agentAuth, lineCount, viaProxy } from '../helpers/admin.js';
import { startChild, writeConfig } from '../helpers/child-gateway.js';
import { readRecords } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { isOutcome, waitForRecords } from '../helpers/wait.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Restart recovery with a real crash: `trajgate start` runs in a child process, is killed with
 * SIGKILL while a session is paused with a request held, and restarted on the same journal.
 * Counts, approvals (with their expiry) and the paused state come back through the API.
 */
const other = await startUpstream(); // never approved for agent-1 before the crash
const forAgent2 = await startUpstream(); // agent-2, ttl 1h
const forAll = await startUpstream(); // every session, no ttl
const brief = await startUpstream(); // every session, ttl 2s: expires across the restart
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = [
  { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' },
  { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
];
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);
const patternOf = (u: { port: number }) => `127.0.0.1:${u.port}`;

/** A config in a fresh folder for a gateway run as a child process (ports chosen by the OS). */
function recoveryConfig(): { dir: string; journal: string; file: string } {
  const dir = tempDir();
  const journal = `${dir}/data/journal.jsonl`;
  const file = writeConfig(dir, {
    version: 1,
    workspace: tempDir('trajgate-ws-'),
    journal,
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents: AGENTS,
    policy: { holdTimeout: '30s' },
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  return { dir, journal, file };
}

describe('restart recovery after SIGKILL', () => {
  it('sessions, counts, approvals and the paused state survive; resume works after', async () => {
    const { journal, file } = recoveryConfig();
    const first = await startChild(file);
    expect(first.banner).toContain('(0 records restored, 0 session(s) paused)');
    let api = adminClient(first.adminPort, ADMIN);

    // agent-1: REVIEW, then PAUSE with a request held
    expect((await viaProxy(first.proxyUrl, `${other.url}/a`, auth(0))).status).toBe(403);
    const held = viaProxy(first.proxyUrl, `${other.url}/b`, auth(0));
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
    // agent-2: an approval for 1h; global approvals without and with a short ttl
    const a2 = await api.post('/api/sessions/agent-2/approve', {
      pattern: patternOf(forAgent2),
      ttl: '1h',
    });
    const all = await api.post('/api/approvals', { pattern: patternOf(forAll) });
    const short = await api.post('/api/approvals', { pattern: patternOf(brief), ttl: '2s' });
    expect([a2.status, all.status, short.status]).toEqual([201, 201, 201]);
    // agent-2 crosses once (REVIEW) and uses both approvals (not counted)
    expect((await viaProxy(first.proxyUrl, `${other.url}/c`, auth(1))).status).toBe(403);
    expect((await viaProxy(first.proxyUrl, `${forAgent2.url}/x`, auth(1))).status).toBe(200);
    expect((await viaProxy(first.proxyUrl, `${brief.url}/x`, auth(1))).status).toBe(200);

    const before = {
      sessions: (await api.get('/api/sessions')).json.sessions,
      agent1: (await api.get('/api/sessions/agent-1')).json,
      agent2: (await api.get('/api/sessions/agent-2')).json,
    };
    expect(before.agent1.pause.restored).toBe(false);
    expect(before.agent2.counts).toEqual({ network: 1 });
    // the outcomes of /a, /c and both /x, written after their answers, reach the journal before the crash
    await waitForRecords({ records: () => readRecords(journal) }, isOutcome, 4);
    const lines = lineCount(journal);

    // crash
    expect(await first.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const lost = await held;
    expect(lost.status).toBe(0); // the held connection died with the process
    expect(lineCount(journal)).toBe(lines);

    // the short approval expires while trajgate is down: the time passing is what is tested
    const expiry = Date.parse(short.json.approval.expiresAt);
    await sleep(Math.max(0, expiry - Date.now() + 50));

    const second = await startChild(file);
    expect(second.banner).toContain(`(${lines} records restored, 1 session(s) paused)`);
    api = adminClient(second.adminPort, ADMIN);

    const sessions = (await api.get('/api/sessions')).json.sessions;
    expect(sessions).toEqual(
      before.sessions.map((s: { id: string }) => (s.id === 'agent-1' ? { ...s, held: 0 } : s)),
    );
    const agent1 = (await api.get('/api/sessions/agent-1')).json;
    expect(agent1).toMatchObject({
      state: 'paused',
      pausedAt: before.agent1.pausedAt,
      pausedBy: 'network',
      counts: { network: 2 },
      held: 0,
      heldRequests: [],
    });
    expect(agent1.pause).toEqual({ ...before.agent1.pause, restored: true });
    expect(agent1.pause.held).toEqual([expect.objectContaining({ what: `GET ${other.url}/b` })]);
    expect(agent1.recent).toEqual(before.agent1.recent);

    const agent2 = (await api.get('/api/sessions/agent-2')).json;
    expect(agent2.counts).toEqual({ network: 1 });
    // its REVIEW came after the operator's last action on it: flagged, after a restart too
    expect(agent2).toMatchObject({ state: 'flagged', flagged: 1 });
    expect(agent2.approvals).toContainEqual(a2.json.approval);
    expect(agent2.approvals).toContainEqual(all.json.approval);
    expect(agent2.approvals.map((a: { pattern: string }) => a.pattern)).not.toContain(
      patternOf(brief),
    );
    const globals = (await api.get('/api/approvals')).json.approvals;
    expect(globals).toContainEqual(all.json.approval);
    expect(globals).not.toContainEqual(short.json.approval);

    // approvals still apply (not counted); the expired one counts again: PAUSE for agent-2
    expect((await viaProxy(second.proxyUrl, `${forAgent2.url}/y`, auth(1))).status).toBe(200);
    expect((await viaProxy(second.proxyUrl, `${forAll.url}/y`, auth(1))).status).toBe(200);
    const expired = viaProxy(second.proxyUrl, `${brief.url}/y`, auth(1));
    await waitFor(async () => (await api.get('/api/sessions/agent-2')).json.held === 1);
    expect((await api.post('/api/sessions/agent-2/deny')).json.released).toBe(1);
    expect((await expired).status).toBe(403);
    expect(brief.seen.map((r) => r.url)).toEqual(['/x']);

    // agent-1 is still paused: a new request is held; approve + resume releases it
    const after = viaProxy(second.proxyUrl, `${other.url}/d`, auth(0));
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
    await api.post('/api/sessions/agent-1/approve', { pattern: patternOf(other) });
    expect((await api.post('/api/sessions/agent-1/resume')).json).toEqual({
      resumed: true,
      released: 1,
      pausedAgain: null,
    });
    expect((await after).status).toBe(200);
    expect(other.seen.map((r) => r.url)).toEqual(['/d']);
    const resumed = (await api.get('/api/sessions/agent-1')).json;
    expect(resumed).toMatchObject({ state: 'active', pause: null, counts: { network: 2 } });

    // a clean stop; the journal holds the operator actions with who did them
    expect(await second.kill('SIGTERM')).toEqual({ code: 0, signal: null });
    const ops = readRecords(journal).filter((r) => ['approve', 'resume', 'deny'].includes(r.type));
    expect(ops.map((r) => r.type)).toEqual([
      'approve',
      'approve',
      'approve',
      'deny',
      'approve',
      'resume',
    ]);
    for (const r of ops) expect(r).toMatchObject({ by: 'operator', ts: expect.any(String) });
  }, 90_000);

  it('a reset resume and a denial survive the crash too', async () => {
    const { journal, file } = recoveryConfig();
    const first = await startChild(file);
    const api = adminClient(first.adminPort, ADMIN);
    const held: Promise<unknown>[] = [];
    for (const i of [0, 1]) {
      const id = AGENTS[i]!.id;
      expect((await viaProxy(first.proxyUrl, `${other.url}/r${i}`, auth(i))).status).toBe(403);
      held.push(viaProxy(first.proxyUrl, `${other.url}/p${i}`, auth(i)));
      await waitFor(async () => (await api.get(`/api/sessions/${id}`)).json.held === 1);
    }
    // agent-1: resume with reset; its held request is judged again from zero (REVIEW, 403)
    expect((await api.post('/api/sessions/agent-1/resume', { reset: true })).json.released).toBe(1);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.counts.network === 1);
    // agent-2: denied, stays paused
    expect((await api.post('/api/sessions/agent-2/deny')).json.released).toBe(1);
    await Promise.all(held);
    const before = (await api.get('/api/sessions')).json.sessions;
    // every request's outcome (two REVIEWs, the re-judged one, the denied one) before the crash
    await waitForRecords({ records: () => readRecords(journal) }, isOutcome, 4);
    await first.kill('SIGKILL');

    const second = await startChild(file);
    expect(second.banner).toContain('1 session(s) paused)');
    const api2 = adminClient(second.adminPort, ADMIN);
    expect((await api2.get('/api/sessions')).json.sessions).toEqual(before);
    const [a1, a2] = [
      (await api2.get('/api/sessions/agent-1')).json,
      (await api2.get('/api/sessions/agent-2')).json,
    ];
    // the held request judged again from zero was a REVIEW: flagged since the reset
    expect(a1).toMatchObject({ state: 'flagged', counts: { network: 1 }, pause: null });
    expect(a2).toMatchObject({ state: 'paused', counts: { network: 2 }, held: 0 });
    expect(a2.pause).toMatchObject({ restored: true, boundary: 'network', count: 2 });
    await second.kill('SIGKILL');
  }, 90_000);
});
