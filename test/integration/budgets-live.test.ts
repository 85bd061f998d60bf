import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import type { BudgetView, PauseRecord } from '../../src/wire.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import type { ChildGateway } from '../helpers/child-gateway.js';
import { startChild, tempConfig } from '../helpers/child-gateway.js';
import { runCliAsync } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import { readRecords } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A budget live: an agent's requests through the proxy pause at the budget, an operator tops it
 * up (`trajgate topup`, then the API), the held request goes, the next past the new limit pauses
 * again; after a `kill -9` of the gateway (the built CLI in a child process) the counts and the
 * topped-up limit come back from the journal.
 */
const upstream = await startUpstream();
const ID = 'agent-1';
const TOKEN = 'agent-1-token-0123456789abcdef';
const ADMIN = 'admin-token-0123456789abcdef';
const UPLOADER = 'agent-2';
const UPLOADER_TOKEN = 'agent-2-token-0123456789abcdef';
const { journal, config } = tempConfig({
  admin: { token: ADMIN },
  agents: [
    { id: ID, token: TOKEN },
    { id: UPLOADER, token: UPLOADER_TOKEN },
  ],
  network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
  policy: {
    pause: 'hold',
    budgets: [
      { name: 'calls', requests: 3, within: '1h', verdict: 'PAUSE' },
      { name: 'up', bytesUp: '20KB', within: '1h', verdict: 'REVIEW' },
    ],
  },
});

const get = (g: ChildGateway, path: string) =>
  viaProxy(g.proxyUrl, `${upstream.url}${path}`, agentAuth(ID, TOKEN));

const pauses = () =>
  readRecords(journal).filter((r): r is JournalRecord & PauseRecord => r.type === 'pause');

async function budget(g: ChildGateway): Promise<BudgetView> {
  const detail = await adminClient(g.adminPort, ADMIN).get(`/api/sessions/${ID}`);
  return (detail.json.budgets as BudgetView[])[0] as BudgetView;
}

describe('a budget paused, topped up, paused again, rebuilt after kill -9', () => {
  it('pauses at the budget; a top-up lets the held request go; the new limit pauses again', async () => {
    let g = await startChild(config, 20_000);
    for (const n of [1, 2, 3]) expect((await get(g, `/ok/${n}`)).status, `request ${n}`).toBe(200);

    // The fourth is held: the session paused by the budget.
    const held = get(g, '/held/4');
    await waitFor(() => pauses().length === 1, 20_000, 'the budget pause');
    const pause = pauses()[0] as PauseRecord;
    expect(pause).toMatchObject({ boundary: 'budget', trigger: { rule: { name: 'calls' } } });
    expect(pause.reason).toContain('budget calls: network to 127.0.0.1');
    expect(pause.reason).toContain('after 3 of 3 requests used within 1h');
    expect(await budget(g)).toMatchObject({ used: 3, limit: 3, toppedUp: 0 });

    const topped = await runCliAsync(
      ['topup', ID, 'calls', '+2', '--admin', `http://127.0.0.1:${g.adminPort}`],
      { env: { TRAJGATE_ADMIN_TOKEN: ADMIN } },
    );
    expect(topped.stderr).toBe('');
    expect(topped.stdout).toContain(
      'topped up calls of agent-1 by 2 (now 4 of 5 requests used within 1h); resumed, 1 held request(s) judged again',
    );
    expect(topped.status).toBe(0);
    expect((await held).status).toBe(200);
    const topup = readRecords(journal).find((r) => r.type === 'topup');
    expect(topup).toMatchObject({ session: ID, budget: 'calls', amount: 2, by: 'operator' });
    const resume = readRecords(journal).find((r) => r.type === 'resume') as JournalRecord;
    expect(resume.seq).toBeGreaterThan((topup as JournalRecord).seq);

    expect((await get(g, '/ok/5')).status).toBe(200);
    const again = get(g, '/held/6');
    await waitFor(() => pauses().length === 2, 20_000, 'the second budget pause');
    expect((pauses()[1] as PauseRecord).reason).toContain(
      '5 of 5 requests used within 1h, 3 + 2 topped up',
    );
    expect(await budget(g)).toMatchObject({ used: 5, limit: 5, toppedUp: 2 });

    // kill -9: the held request's connection goes with the gateway; the state comes back.
    await g.kill('SIGKILL');
    expect((await again).status).not.toBe(200);
    g = await startChild(config, 20_000);
    const api = adminClient(g.adminPort, ADMIN);
    const view = (await api.get(`/api/sessions/${ID}`)).json;
    expect(view).toMatchObject({
      state: 'paused',
      pausedBy: 'budget',
      pausedRule: { name: 'calls' },
    });
    expect(await budget(g)).toMatchObject({ used: 5, limit: 5, toppedUp: 2, within: '1h' });

    // An unknown budget or a bad amount changes nothing, from the CLI or the API.
    const before = readRecords(journal).length;
    const cli = (...args: string[]) =>
      runCliAsync(['topup', ...args, '--admin', `http://127.0.0.1:${g.adminPort}`], {
        env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
      });
    const listed = await runCliAsync(['sessions', '--admin', `http://127.0.0.1:${g.adminPort}`], {
      env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
    });
    expect(listed.stdout).toContain('PAUSED (budget calls)');
    const typo = await cli(ID, 'call');
    expect(typo.stderr).toContain('no budget "call" (budgets: calls, up)');
    expect(typo.status).toBe(2);
    const nonsense = await cli(ID, 'calls', '+1x');
    expect(nonsense.stderr).toContain('the amount must be +N, a whole number of at least 1');
    expect(nonsense.status).toBe(2);
    const unknown = await api.post(`/api/sessions/${ID}/topup`, { budget: 'call', amount: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toBe(
      'no budget "call" in policy.budgets (budgets: calls, up)',
    );
    const bad = await api.post(`/api/sessions/${ID}/topup`, { budget: 'calls', amount: -1 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('field "amount" must be a whole number of at least 1');
    expect(readRecords(journal).length).toBe(before);

    const answer = await api.post(`/api/sessions/${ID}/topup`, { budget: 'calls', amount: 1 });
    expect(answer.json).toMatchObject({
      amount: 1,
      resumed: true,
      released: 0,
      pausedAgain: null,
      budget: { used: 5, limit: 6, toppedUp: 3 },
    });
    expect((await get(g, '/ok/7')).status).toBe(200);
    const third = get(g, '/held/8');
    await waitFor(() => pauses().length === 3, 20_000, 'the third budget pause');
    expect((pauses()[2] as PauseRecord).reason).toContain('6 of 6 requests used');
    await g.kill('SIGKILL');
    await third.catch(() => undefined);
  });

  it('bytes sent up reach a bytesUp budget: the next request is a REVIEW naming it', async () => {
    const g = await startChild(config, 20_000);
    const auth = agentAuth(UPLOADER, UPLOADER_TOKEN);
    const body = 'x'.repeat(25_000);
    const url = `${upstream.url}/bulk`;
    const up = await curl(['-s', '-x', g.proxyUrl, ...auth, '--data-binary', body, url]);
    expect(up.status).toBe(200);
    const next = await viaProxy(g.proxyUrl, `${upstream.url}/after`, auth);
    expect(next.status).toBe(403);
    expect(next.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=budget');
    const last = readRecords(journal)
      .filter((r) => r.type === 'event' && r.session === UPLOADER)
      .at(-1);
    expect(last).toMatchObject({ verdict: 'REVIEW', boundary: 'budget', rule: { name: 'up' } });
    expect((last as { reason: string }).reason).toMatch(
      /budget up: network to .* after \d+ of 20000 bytes sent up within 1h/,
    );
    await g.kill('SIGTERM');
  });
});
