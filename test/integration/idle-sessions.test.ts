import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EvictRecord, JournalRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * With `policy.sessionIdle: 1s` a running gateway journals an `evict` record for a session with
 * nothing left to remember and forgets it; a paused and a flagged one stay. A restart from the
 * journal shows the same sessions, and the evicted one coming back starts at zero.
 */
const ADMIN = 'operator-admin-token-0123456789';
const ws = tempDir('trajgate-ws-');
const AGENTS = ['paused', 'flagged', 'quiet'];
const CONFIG = {
  workspace: ws,
  agents: AGENTS.map((id) => ({ id, token: agentToken(id) })),
  policy: { pause: 'block', sessionIdle: '1s' },
  admin: { token: ADMIN },
};
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});

type View = { id: string; state: string; events: number; lastActivity: string | null };
const isEvict = (r: JournalRecord): r is EvictRecord => r.type === 'evict';

async function start(dir: string) {
  const g = await startTestGateway(CONFIG, { dir });
  gateways.push(g);
  const bridge = `http://127.0.0.1:${g.gw.bridge.port}/events`;
  const api = adminClient(g.gw.admin.port, ADMIN);
  const ingest = async (id: string, kind: string, target: string) =>
    (await postAsAgent(bridge, id, { kind, target })).json.verdict as string;
  // Configured agents are always listed: one forgotten shows no activity.
  const sessions = async () =>
    ((await api.get('/api/sessions')).json.sessions as View[])
      .map((s) => [s.id, s.state, s.events, s.lastActivity !== null])
      .sort();
  return { g, api, ingest, sessions };
}

describe('idle sessions (policy.sessionIdle)', () => {
  it('forgets an idle session with nothing to remember, keeps paused and flagged ones, and a restart agrees', async () => {
    const dir = tempDir();
    const one = await start(dir);
    // Looked at in this order by the sweep: paused and flagged were idle longer than quiet.
    expect(await one.ingest('paused', 'write', '/etc/cron.d/x')).toBe('PAUSE');
    expect(await one.ingest('flagged', 'network', 'https://example.test/api')).toBe('REVIEW');
    expect(await one.ingest('quiet', 'read', join(ws, 'a.txt'))).toBe('ALLOW');
    expect(await one.ingest('quiet', 'read', join(ws, 'b.txt'))).toBe('ALLOW');

    const records = await waitForRecords(one.g, isEvict);
    const evicted = records.filter(isEvict);
    expect(evicted.map((r) => r.session)).toEqual(['quiet']);
    const quietLast = records.filter((r) => r.type === 'event' && r.session === 'quiet').at(-1);
    expect(evicted[0]?.idleSince).toBe(quietLast?.ts);
    expect(Date.parse(evicted[0]!.ts) - Date.parse(evicted[0]!.idleSince)).toBeGreaterThanOrEqual(
      1_000,
    );
    const kept = [
      ['flagged', 'flagged', 1, true],
      ['paused', 'paused', 1, true],
      ['quiet', 'active', 0, false],
    ];
    expect(await one.sessions()).toEqual(kept);
    expect((await one.api.get('/api/sessions/quiet/events')).json.events).toEqual([]);
    expect((await one.api.get('/api/sessions/flagged/events')).json.events).toHaveLength(1);
    const metrics = (await one.api.get('/metrics')).text;
    expect(metrics).toMatch(/^trajgate_sessions_evicted_total 1$/m);
    expect(metrics).toMatch(/^trajgate_sessions 2$/m);

    await one.g.stop();
    const two = await start(dir);
    expect(await two.sessions()).toEqual(kept);
    expect((await two.api.get('/api/sessions/flagged')).json).toMatchObject({
      flagged: 1,
      counts: { network: 1 },
    });

    // Back after eviction: no history, counts from zero (one network crossing is a REVIEW).
    expect(await two.ingest('quiet', 'network', 'https://example.test/api')).toBe('REVIEW');
    expect((await two.api.get('/api/sessions/quiet')).json).toMatchObject({
      events: 1,
      counts: { network: 1 },
    });
    expect(two.g.records().filter(isEvict)).toHaveLength(1);
  });
});
