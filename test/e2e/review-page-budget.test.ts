import { describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { ADMIN, auth, reviewStage } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';
import { openBrowser, signIn, textOf } from './browser.js';
import { pageUrl } from './stage.js';

/**
 * The review page on a budget's pause: the pause names the budget and what it used; "Top up…"
 * asks in the confirm dialog (the budget's own limit by default, the new limit shown), the held
 * request goes, and the message says what the budget is now. Chromium, loopback only.
 */
const { allowed, start } = await reviewStage();

describe('review page: top up a budget', () => {
  it('tops up from the pause and the held request goes', async () => {
    const [g, api] = await start({
      policy: { holdTimeout: '20s', budgets: [{ name: 'calls', requests: 2, within: '1h' }] },
    });
    for (const n of [1, 2])
      expect((await viaProxy(g.proxyUrl, `${allowed.url}/${n}`, auth(0))).status).toBe(200);
    const held = viaProxy(g.proxyUrl, `${allowed.url}/3`, auth(0));
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    await textOf(page.locator('dl.facts').first(), /Boundarybudget calls/);
    const section = page.getByRole('region', { name: 'Budget' });
    await textOf(section, /Budget calls/);
    await textOf(section, /2 of 2 requests used within 1h/);
    expect(await page.locator('#topup-amount').inputValue()).toBe('2');
    await page.locator('#topup-amount').fill('3');
    await page.locator('#topup').click();
    const dialog = page.getByRole('dialog');
    const asked = await textOf(dialog, /Top up budget calls\?/);
    expect(asked).toContain('Top up by3');
    expect(asked).toContain('New limit5 in this window');
    await dialog.getByRole('button', { name: 'Top up' }).click();
    await textOf(
      page.locator('#action-message'),
      /Topped up calls by 3\. Now 3 of 5 requests used within 1h \(2 \+ 3 topped up\)\. Resumed: 1 held request judged again\./,
    );
    expect((await held).status).toBe(200);
    expect(g.records().find((r) => r.type === 'topup')).toMatchObject({
      session: 'agent-1',
      budget: 'calls',
      amount: 3,
      by: 'operator',
    });
    expect((await api.get('/api/sessions/agent-1')).json.state).toBe('active');
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);
});
