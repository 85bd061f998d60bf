import { describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { follow, ofType } from '../helpers/decision-links.js';
import { oneAgentStage } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * A budget's pause notification carries a top-up link: the budget's own limit by default,
 * signed like every decision link; following it tops up (journaled, `by: "link"`) and resumes,
 * the held request goes, and the next past the new limit pauses again with links of its own.
 */
const { other, auth, start } = await oneAgentStage();

describe('a top-up decision link', () => {
  it('tops the budget up by its own limit and resumes; the new limit pauses again', async () => {
    const hook = await startWebhook();
    const [g, api] = await start({
      network: { allow: [`127.0.0.1:${other.port}`], allowPrivate: ['127.0.0.1/32'] },
      notify: { webhook: hook.url },
      policy: { budgets: [{ name: 'calls', requests: 2, within: '1h' }] },
    });
    for (const n of [1, 2])
      expect((await viaProxy(g.proxyUrl, `${other.url}/${n}`, auth)).status).toBe(200);
    const held = viaProxy(g.proxyUrl, `${other.url}/3`, auth);
    await waitFor(async () => hook.deliveries.length === 1);
    const links = hook.deliveries[0]!.body.links;
    expect(links.approvePattern).toBeNull();
    expect(links.topUp).toMatchObject({ budget: 'calls', amount: 2 });
    expect(hook.deliveries[0]!.body.text).toContain('Top up calls +2');

    const page = await follow(links.topUp.url, 'GET', true);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Top up calls by 2?');
    expect(page.text).toContain('budget calls: network to 127.0.0.1');
    expect(ofType(g, 'topup')).toHaveLength(0);

    const done = await follow(links.topUp.url, 'POST');
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({
      decided: 'topup',
      session: 'agent-1',
      released: 1,
      topUp: { budget: 'calls', amount: 2 },
    });
    expect((await held).status).toBe(200);
    expect(ofType(g, 'topup')).toEqual([
      expect.objectContaining({ session: 'agent-1', budget: 'calls', amount: 2, by: 'link' }),
    ]);
    expect((await follow(links.topUp.url, 'POST')).status).toBe(410);

    expect((await viaProxy(g.proxyUrl, `${other.url}/4`, auth)).status).toBe(200);
    const again = viaProxy(g.proxyUrl, `${other.url}/5`, auth);
    await waitFor(async () => hook.deliveries.length === 2);
    expect(hook.deliveries[1]!.body.text).toContain('Top up calls +2');
    const detail = (await api.get('/api/sessions/agent-1')).json;
    expect(detail.budgets[0]).toMatchObject({ used: 4, limit: 4, toppedUp: 2 });
    await api.post('/api/sessions/agent-1/deny');
    expect((await again).status).toBe(403);
  });
});
