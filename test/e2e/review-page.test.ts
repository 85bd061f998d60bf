import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { ADMIN, auth, reviewStage } from '../helpers/review-story.js';
import { openBrowser, overflowX, screenshot, signIn, textOf } from './browser.js';
import { ingest, pageUrl } from './stage.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The review page in real headless Chromium: a session is driven to PAUSE through the proxy
 * (curl), the operator opens the page, pastes the token, finds the paused session, opens its
 * timeline and decides by clicking (or by keyboard alone); the held request's client sees the
 * decision. Loopback only: `allowed` is allowlisted, `other` is not.
 */
const { allowed, other, start, pause } = await reviewStage();

describe('review page: approve, resume, deny', () => {
  it('shows the paused session and its timeline; approve + resume answers the held request 200', async () => {
    const [g, api] = await start();
    const ws = g.gw.config.workspace;
    // A trajectory worth looking at: tool events inside the workspace, an allowed request,
    // then the first unapproved request (REVIEW) and the second (PAUSE, held).
    for (const e of [
      { kind: 'read', target: join(ws, 'README.md') },
      { kind: 'command', target: join(ws, 'tests') },
      { kind: 'write', target: join(ws, 'src/report.json') },
      { kind: 'read', target: join(ws, 'src/report.json') },
    ])
      expect((await ingest(g, 0, e)).json.verdict).toBe('ALLOW');
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/packages`, auth(0))).status).toBe(200);
    expect((await ingest(g, 1, { kind: 'read', target: join(ws, 'notes.txt') })).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(1))).status).toBe(200);

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    const res = await page.goto(pageUrl(g));
    expect(res?.status()).toBe(200);
    await signIn(page, ADMIN);
    const rows = page.locator('table.sessions tbody tr');
    await waitFor(async () => (await rows.count()) === 2, 20_000, 'two session rows');
    await textOf(page.locator('#sessions-summary'), /2 sessions · 0 paused/);
    await page.evaluate('window.__sameDocument = true');

    // the session pauses while the operator looks: the list says so within 2 s, no reload
    const { held } = await pause(g, api, 0);
    let answered = false;
    void held.then(() => (answered = true));
    await textOf(page.locator('#sessions-summary'), /1 paused · 1 held request/);
    expect(await page.evaluate('window.__sameDocument')).toBe(true);

    // sessions list: paused first, marked, with counts per boundary
    const first = rows.nth(0);
    expect(await first.locator('th').textContent()).toBe('agent-1');
    expect(await first.getAttribute('class')).toContain('is-paused');
    expect(await first.locator('.badge').textContent()).toBe('Paused');
    expect(await first.locator('.col-counts').textContent()).toBe('network2');
    expect(await first.locator('td').nth(2).textContent()).toBe('1'); // held
    expect(await rows.nth(1).locator('.badge').textContent()).toBe('Active');
    await textOf(page.locator('#sessions-summary'), /2 sessions · 1 paused · 1 held request/);
    await textOf(page.locator('#conn'), /Live/);
    await screenshot(page, 'review-sessions', 'review-sessions.png');

    // the session view: timeline of every event, the pause trigger selected, pattern proposed
    await page.getByRole('link', { name: 'agent-1' }).click();
    const canvas = page.locator('canvas.timeline-canvas');
    await waitFor(
      async () => (await canvas.getAttribute('data-events')) === '7',
      20_000,
      'timeline',
    );
    expect(Number(await canvas.getAttribute('data-draw-ms'))).toBeLessThan(5_000);
    const details = page.locator('#event-details');
    await textOf(details, /PAUSE network · count 2/);
    expect(await details.textContent()).toContain(`${other.url}/second-0`);
    // the gateway's suggestion: the trigger's method and path prefix, not the whole host
    const pattern = page.getByLabel('Pattern', { exact: true });
    const suggested = `GET http://127.0.0.1:${other.port}`;
    const patternIs = (value: string) =>
      waitFor(async () => (await pattern.inputValue()) === value, 20_000, `pattern ${value}`);
    await patternIs(suggested);
    expect(await page.getByLabel('Kind').inputValue()).toBe('network');
    await textOf(page.locator('.held-card'), /GET http:\/\/127\.0\.0\.1:\d+\/second-0/);
    await textOf(page.locator('.held-card'), /waited \d+ s?.*times out in \d+/);
    const recent = page.locator('.pause-card tbody tr');
    expect(await recent.count()).toBe(7);
    expect(await page.locator('.pause-card tr.is-trigger .col-target').textContent()).toBe(
      `GET${other.url}/second-0`,
    );

    // hovering a mark shows the event: sweep the network lane until the tooltip appears
    const box = (await canvas.boundingBox())!;
    const tip = page.locator('.timeline-tip');
    for (let x = box.width - 10; x > 100 && !(await tip.isVisible()); x -= 3)
      await page.mouse.move(box.x + x, box.y + 24 + 17);
    expect(await tip.textContent()).toMatch(/(ALLOW|REVIEW|PAUSE).*127\.0\.0\.1/);
    await page.mouse.move(box.x + 5, box.y + 5);
    await screenshot(page, 'review-session', 'review-session.png');

    // keyboard on the timeline: Home selects the first event, End the last
    await canvas.focus();
    await page.keyboard.press('Home');
    await textOf(details, /read \(via ingest\)/);
    await patternIs(join(ws, 'README.md'));
    await page.keyboard.press('End');
    await textOf(details, /PAUSE network/);
    await patternIs(suggested);

    // approve: confirm in the dialog; the approval is listed within 2 s
    await page.getByLabel('Expires after').fill('1h');
    await page.getByRole('button', { name: 'Approve pattern…' }).click();
    const dialog = page.getByRole('dialog');
    await textOf(dialog, /Approve this pattern\?.*127\.0\.0\.1:\d+.*after 1h/);
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await textOf(
      page.locator('#action-message'),
      /Approved network GET http:\/\/127\.0\.0\.1:\d+ until/,
    );
    await textOf(page.locator('.approvals-card'), new RegExp(`127\\.0\\.0\\.1:${other.port}`));
    expect(answered).toBe(false); // still held: approving does not resume

    // resume with the counts reset: the view turns active within 2 s, the client gets its
    // answer from the upstream
    await page.getByLabel('Reset the counts on resume').check();
    await page.getByRole('button', { name: 'Resume…' }).click();
    await textOf(dialog, /Counts\s*reset to zero/);
    await dialog.getByRole('button', { name: 'Resume' }).click();
    await textOf(page.locator('.session-head .badge'), /^Active$/);
    await textOf(page.locator('.held-card'), /Nothing is held/);
    await textOf(page.locator('#action-message'), /Resumed with counts reset: 1 held request/);
    await waitFor(async () => (await page.locator('.session-head .chip').count()) === 0);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).url).toBe('/second-0');
    expect(await page.getByRole('button', { name: 'Deny…' }).isDisabled()).toBe(true);

    // back to the list: agent-1 is active now
    await page.getByRole('link', { name: '← All sessions' }).click();
    await textOf(page.locator('#sessions-summary'), /0 paused/);

    const journal = g.records();
    expect(journal.find((r) => r.type === 'approve')).toMatchObject({
      session: 'agent-1',
      pattern: suggested,
      by: 'operator',
    });
    expect(journal.find((r) => r.type === 'resume')).toMatchObject({
      session: 'agent-1',
      reset: true,
    });
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);

  it('deny by keyboard alone on a narrow window: the held request gets 403', async () => {
    const [g, api] = await start();
    const { held } = await pause(g, api, 0);
    const { page, dialogs, errors, offLoopback } = await openBrowser({ width: 400, height: 860 });
    await page.goto(pageUrl(g));
    await page.getByLabel('Admin token').focus();
    await page.keyboard.type(ADMIN);
    await page.keyboard.press('Enter');

    const tabTo = async (name: RegExp) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab');
        const focused = (await page.evaluate(
          'document.activeElement && (document.activeElement.textContent || "").trim()',
        )) as string | null;
        if (focused && name.test(focused)) return;
      }
      throw new Error(`no focusable element named ${name}`);
    };
    await textOf(page.locator('#sessions-summary'), /1 paused/);
    expect(await overflowX(page)).toBe(0);
    await screenshot(page, 'review-sessions-narrow');
    await tabTo(/^agent-1$/);
    await page.keyboard.press('Enter');
    await textOf(page.locator('.held-card'), /second-0/);
    await waitFor(
      async () =>
        (await page.locator('canvas.timeline-canvas').getAttribute('data-events')) === '2',
    );
    expect(await overflowX(page)).toBe(0);
    await screenshot(page, 'review-session-narrow');

    await tabTo(/^Deny…$/);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await textOf(dialog, /Deny the held requests\?/);
    // a destructive action starts on Cancel: one Tab moves to Deny
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Cancel');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');

    const answer = await held;
    expect(answer.status).toBe(403);
    expect(answer.headers['x-trajgate-verdict']).toMatch(/^PAUSE/);
    await textOf(page.locator('#action-message'), /Denied: 1 held request answered 403/);
    await textOf(page.locator('.held-card'), /Nothing is held/);
    expect(await page.locator('.session-head .badge').textContent()).toBe('Paused');
    expect(g.records().find((r) => r.type === 'deny')).toMatchObject({ released: 1 });
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);

  it('shows an API error instead of swallowing it (a pattern that does not parse)', async () => {
    const [g, api] = await start();
    const { held } = await pause(g, api, 0);
    const { page, errors } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    await textOf(page.locator('.held-card'), /second-0/);
    // The page fills in its suggestion as the session loads: type over it once it is there.
    const pattern = page.getByLabel('Pattern', { exact: true });
    await waitFor(async () => (await pattern.inputValue()) !== '', 20_000, 'the suggestion');
    await pattern.fill('GIT https://example.com');
    await page.getByRole('button', { name: 'Approve pattern…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve' }).click();
    await textOf(
      page.locator('#action-message'),
      /unknown method "GIT".*\(400 E_PATTERN_INVALID\)/,
    );
    // cancelling a confirmation does nothing
    await page.getByRole('button', { name: 'Deny…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    // a negative check: no deny or approve is journaled within 300 ms of the cancel
    await new Promise((r) => setTimeout(r, 300));
    expect(g.records().some((r) => r.type === 'deny' || r.type === 'approve')).toBe(false);
    expect((await api.get('/api/sessions/agent-1')).json.held).toBe(1);
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
  }, 60_000);
});
