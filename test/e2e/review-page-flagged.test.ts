import { describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { ADMIN, AGENTS, auth, reviewStage } from '../helpers/review-story.js';
import { openBrowser, overflowX, screenshot, signIn, textOf } from './browser.js';
import { pageUrl } from './stage.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The review page for what comes before a pause, in real headless Chromium: a session flagged
 * by a refused POST shows in the list; its detail shows the REVIEW with the captured request
 * (the body the agent tried to send, never forwarded) beside it; the operator approves the
 * pattern the gateway suggests from there, revokes it by id, and adds a deny pattern for a
 * session and revokes it again. `allowed` is allowlisted, `other` is not.
 */
const { allowed, other, start } = await reviewStage();
const UPLOAD = '{"query":"SELECT * FROM customers","limit":5000}';

const postJson = (g: TestGateway, path: string) =>
  curl([
    ...auth(0),
    '-x',
    g.proxyUrl,
    '-H',
    'Content-Type: application/json',
    '--data-binary',
    UPLOAD,
    `${other.url}${path}`,
  ]);

describe('review page: flagged sessions, captures, revoke and deny patterns', () => {
  it('flags, shows the capture, approves the suggested pattern from the flag, revokes it', async () => {
    const [g, api] = await start({
      // a refusal once paused answers at once: the test needs no held request
      policy: { holdTimeout: '20s', pause: 'block' },
      capture: { bodies: true },
      agents: [
        { ...AGENTS[0], allow: [`GET http://127.0.0.1:${allowed.port}/agent-1/`] },
        AGENTS[1],
      ],
    });
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/packages`, auth(0))).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(1))).status).toBe(200);
    const refused = await postJson(g, '/v1/upload');
    expect(refused.status).toBe(403);
    const seen = other.seen.length;

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    await textOf(page.locator('#sessions-summary'), /2 sessions · 0 paused .* · 1 flagged/);
    const row = page.locator('table.sessions tbody tr', { hasText: 'agent-1' });
    expect(await row.getAttribute('class')).toContain('is-flagged');
    expect(await row.locator('.badge').textContent()).toBe('Flagged');
    expect(await row.locator('.state-note').textContent()).toBe('1 REVIEW');
    const quiet = page.locator('table.sessions tbody tr', { hasText: 'agent-2' });
    expect(await quiet.locator('.badge').textContent()).toBe('Active');
    await screenshot(page, 'review-sessions-flagged');

    // the detail: the flag, with the REVIEW; its capture beside the event
    await page.getByRole('link', { name: 'agent-1' }).click();
    await textOf(page.locator('.session-head .badge'), /^Flagged$/);
    const flagged = page.locator('.reviews-card');
    await textOf(flagged, /1 REVIEW since the last operator action/);
    await textOf(flagged, new RegExp(`POST${other.url}/v1/upload`.replace(/[/.]/g, '\\$&')));
    await flagged.getByRole('button', { name: /^Show event/ }).click();
    const capture = page.locator('#capture-view');
    await textOf(capture, /not forwarded/);
    await textOf(
      capture.locator('.capture-line').first(),
      new RegExp(`^POST ${other.url}/v1/upload$`),
    );
    const body = capture.locator('pre.capture-body').first();
    expect(JSON.parse((await body.textContent()) ?? '')).toEqual(JSON.parse(UPLOAD));
    expect(await body.textContent()).toContain('\n  "query": "SELECT * FROM customers"');
    await textOf(capture, /application\/json · 48 bytes sent · text/);
    await textOf(capture, /Refusal 403 \(from trajgate\)/);
    // headers are there, secrets redacted by the gateway
    await capture.locator('summary').first().click();
    await textOf(capture.locator('.capture-headers').first(), /Proxy-Authorization\[redacted\]/i);
    expect(await capture.textContent()).not.toContain(AGENTS[0]!.token);
    // the approve form holds the gateway's suggestion: method and path prefix
    const pattern = page.getByLabel('Pattern', { exact: true });
    const suggested = `POST http://127.0.0.1:${other.port}/v1/`;
    await waitFor(async () => (await pattern.inputValue()) === suggested, 20_000, 'suggestion');
    // the effective allowlist: network.allow and this agent's own
    const allowlist = page.locator('.approvals-card .allow-list li');
    expect(await allowlist.allTextContents()).toEqual([
      `127.0.0.1:${allowed.port}`,
      `GET http://127.0.0.1:${allowed.port}/agent-1/`,
    ]);
    await screenshot(page, 'review-flagged', 'review-flagged.png');

    // approve from the flag: the confirmation shows the suggested pattern
    await flagged.getByRole('button', { name: /^Approve what event/ }).click();
    const dialog = page.getByRole('dialog');
    await textOf(
      dialog,
      new RegExp(`Approve this pattern\\?.*POST http://127\\.0\\.0\\.1:${other.port}/v1/`),
    );
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await textOf(
      page.locator('#action-message'),
      /Approved network POST http:\/\/127\.0\.0\.1:\d+\/v1\//,
    );
    await textOf(page.locator('.session-head .badge'), /^Active$/);
    await waitFor(async () => await flagged.isHidden(), 20_000, 'flag cleared');
    const approval = page.locator('.approvals-card li.approval', { hasText: suggested });
    const id = (await approval.locator('.approval-id').textContent()) ?? '';
    expect(id).toMatch(/^a\d+$/);
    // config entries show their source and no button; the operator's a Revoke button
    const config = page.locator('.approvals-card li.approval', { hasText: 'config:' });
    expect(await config.count()).toBeGreaterThan(0);
    expect(await config.locator('button').count()).toBe(0);
    expect((await postJson(g, '/v1/upload')).status).toBe(200);
    expect(other.seen.length).toBe(seen + 1);

    // revoke by id: gone from the card, and the next POST is refused again
    await approval.getByRole('button', { name: `Revoke approval ${id}: ${suggested}` }).click();
    await textOf(dialog, new RegExp(`Revoke this approval\\?.*${id}`));
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Cancel');
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await textOf(page.locator('#action-message'), new RegExp(`Revoked ${id} \\(POST http`));
    await waitFor(async () => (await approval.count()) === 0, 20_000, 'approval gone');
    expect((await api.get('/api/approvals')).json.approvals.some((a: any) => a.id === id)).toBe(
      false,
    );
    expect(g.records().find((r) => r.type === 'revoke')).toMatchObject({ id, by: 'operator' });
    expect((await postJson(g, '/v1/upload')).status).toBe(403);
    expect(other.seen.length).toBe(seen + 1);

    // a phone-width window: the capture stacks under its event, nothing sticks out
    await page.setViewportSize({ width: 400, height: 900 });
    await textOf(capture, /not forwarded/);
    await waitFor(async () => (await overflowX(page)) === 0, 20_000, 'no horizontal overflow');
    await screenshot(page, 'review-flagged-narrow');

    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);

  it('adds a deny pattern for one session, lists it, and revokes it', async () => {
    const [g] = await start({ capture: { bodies: true } });
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(1))).status).toBe(200);
    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-2`);
    await signIn(page, ADMIN);
    const denies = page.locator('.denies-card');
    await textOf(denies, /None: nothing is denied outright/);
    // the selected request's suggestion pre-fills the deny pattern too
    await page.locator('.pause-card tbody tr', { hasText: '/v1/index' }).click();
    const denyPattern = page.getByLabel('Deny pattern', { exact: true });
    const prefix = `GET http://127.0.0.1:${allowed.port}/v1/`;
    await waitFor(
      async () => (await denyPattern.inputValue()) === prefix,
      20_000,
      'deny pattern prefill',
    );
    await denies.getByRole('button', { name: 'Add deny pattern…' }).click();
    const dialog = page.getByRole('dialog');
    await textOf(dialog, /Add this deny pattern\?.*agent-2/);
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await textOf(
      page.locator('#action-message'),
      /Added deny pattern GET http:.*\/v1\/ for this session \(d\d+\)/,
    );
    const deny = denies.locator('li.deny', { hasText: prefix });
    await textOf(deny, /this session · by operator/);
    const id = (await deny.locator('.approval-id').textContent()) ?? '';
    expect(id).toMatch(/^d\d+$/);
    expect(g.records().find((r) => r.type === 'deny-pattern')).toMatchObject({
      session: 'agent-2',
      pattern: prefix,
      by: 'operator',
    });
    // it beats the allowlist for agent-2, and only for agent-2
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(1))).status).toBe(403);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(0))).status).toBe(200);
    await screenshot(page, 'review-deny-pattern');

    await deny.getByRole('button', { name: `Revoke deny pattern ${id}: ${prefix}` }).click();
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await textOf(page.locator('#action-message'), new RegExp(`Revoked deny pattern ${id}`));
    await textOf(denies, /None: nothing is denied outright/);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(1))).status).toBe(200);

    // for every session: a global deny refuses agent-1 too
    await denyPattern.fill(prefix);
    await page.getByLabel('For every session, not only this one').check();
    await denies.getByRole('button', { name: 'Add deny pattern…' }).click();
    await textOf(dialog, /Add this deny pattern\?.*every session/);
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await textOf(
      page.locator('#action-message'),
      /Added deny pattern GET http:.*\/v1\/ for all sessions/,
    );
    expect(
      g
        .records()
        .filter((r) => r.type === 'deny-pattern')
        .at(-1),
    ).toMatchObject({
      session: null,
      pattern: prefix,
    });
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(0))).status).toBe(403);
    const globalDeny = denies.locator('li.deny', { hasText: prefix });
    const globalId = (await globalDeny.locator('.approval-id').textContent()) ?? '';
    await globalDeny
      .getByRole('button', { name: `Revoke deny pattern ${globalId}: ${prefix}` })
      .click();
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await textOf(denies, /None: nothing is denied outright/);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/v1/index`, auth(0))).status).toBe(200);

    // a pattern that does not parse: the API's error, shown
    await denyPattern.fill('GIT http://x');
    await denies.getByRole('button', { name: 'Add deny pattern…' }).click();
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await textOf(page.locator('#action-message'), /\(400 E_PATTERN_INVALID\)/);
    expect(dialogs).toEqual([]);
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);
});
