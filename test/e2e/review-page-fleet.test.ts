import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { ADMIN, AGENTS } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';
import { openBrowser, screenshot, signIn, textOf } from './browser.js';
import { ingest, journalStage, pageUrl } from './stage.js';

/**
 * 20,000 sessions (a journal written before start, read back as after a restart, plus two
 * configured agents): the page shows 50 rows at a time and a small DOM, pages on and back,
 * filters by state and agent, finds one session by part of its id, counts a pause on another
 * page in the top bar, and each poll asks for what is shown only.
 */
const N = 20_000;
const id = (i: number) => `s-${String(i).padStart(5, '0')}`;

function journal(dir: string): void {
  const t0 = Date.now() - 3600_000;
  const lines = Array.from({ length: N }, (_, i) =>
    JSON.stringify({
      seq: i + 1,
      ts: new Date(t0 + i * 100).toISOString(),
      type: 'event',
      session: id(i),
      source: 'bridge',
      kind: 'read',
      target: `/work/file-${i}.ts`,
      approved: false,
      verdict: 'ALLOW',
      boundary: null,
      count: 0,
      reason: 'ok',
    }),
  );
  writeFileSync(join(dir, 'journal.jsonl'), lines.join('\n') + '\n');
}

const rows = (page: Page) => page.locator('table.sessions tbody tr');
const firstRow = (page: Page) => rows(page).first().locator('.session-link').textContent();
const apiPath = (r: Request) => {
  const url = new URL(r.url());
  return url.pathname.startsWith('/api/') ? url.pathname + url.search : null;
};

/**
 * The admin API paths the page asks for over its next `polls` polls. A poll's calls start
 * together, health last: the window opens after one health call and closes with the
 * `polls`-th after it (a session's new events, asked once its detail is read, may fall on
 * either side).
 */
async function askedOver(page: Page, polls: number): Promise<string[]> {
  const asked: string[] = [];
  const seen = (r: Request) => void (apiPath(r) && asked.push(apiPath(r) as string));
  await page.waitForRequest((r) => r.url().endsWith('/api/health'), { timeout: 20_000 });
  page.on('request', seen);
  await waitFor(() => asked.filter((p) => p === '/api/health').length >= polls);
  page.off('request', seen);
  return asked;
}

const { dir, start } = journalStage();

describe('the review page with 20,000 sessions', () => {
  it('pages, filters, searches and polls only what it shows', async () => {
    journal(dir);
    const g = await start({
      agents: AGENTS,
      admin: { token: ADMIN },
      policy: { pause: 'block' },
    });
    expect(g.gw.restored).toBe(N);
    const api = adminClient(g.gw.admin.port, ADMIN);

    const { page, context, errors } = await openBrowser();
    await page.goto(pageUrl(g));
    const opened = Date.now();
    await signIn(page, ADMIN);
    await textOf(page.locator('#sessions-summary'), /20,002 sessions/);
    await textOf(rows(page).first(), new RegExp(id(N - 1)));
    console.log(`first page of ${N + 2} sessions shown ${Date.now() - opened} ms after sign-in`);
    expect(await rows(page).count()).toBe(50);
    const nodes = (await page.evaluate(`document.getElementsByTagName('*').length`)) as number;
    expect(nodes).toBeLessThan(2_500);
    await screenshot(page, 'review-fleet-first-page');

    // Next and Previous
    await page.getByRole('button', { name: 'Next →' }).click();
    await textOf(page.locator('.pager-where'), /Page 2/);
    await textOf(rows(page).first(), new RegExp(id(N - 51)));
    expect(await rows(page).count()).toBe(50);
    await page.getByRole('button', { name: 'Next →' }).click();
    await textOf(rows(page).first(), new RegExp(id(N - 101)));
    await page.getByRole('button', { name: '← Previous' }).click();
    await textOf(rows(page).first(), new RegExp(id(N - 51)));
    await textOf(page.locator('#sessions-summary'), /showing 51–100/);

    // Each poll on page 2: that page (its cursor) and health, nothing else.
    const asked = await askedOver(page, 3);
    const lists = asked.filter((p) => p.startsWith('/api/sessions?'));
    expect(lists).toHaveLength(3);
    expect(new Set(lists).size).toBe(1);
    expect(lists[0]).toMatch(/^\/api\/sessions\?limit=50&cursor=[\w-]+$/);
    expect(asked.filter((p) => p !== '/api/health' && !lists.includes(p))).toEqual([]);
    expect(asked).toHaveLength(6);

    // A pause of a session not on this page: counted in the top bar and the Paused tab.
    expect(
      (await ingest(g, 0, { kind: 'network', target: 'https://paste.example/a' })).status,
    ).toBe(200);
    await ingest(g, 0, { kind: 'network', target: 'https://paste.example/b' });
    await waitFor(async () => (await api.get('/api/sessions?limit=1')).json.counts.paused === 1);
    await textOf(page.locator('#nav-paused'), /^1 paused$/);
    await textOf(page.locator('.tab-paused .tab-count'), /^1$/);
    await textOf(rows(page).first(), new RegExp(id(N - 51)));
    expect(await rows(page).filter({ hasText: AGENTS[0]!.id }).count()).toBe(0);
    await page.locator('#nav-paused').click();
    await waitFor(async () => (await rows(page).count()) === 1, 20_000, 'one paused row');
    await textOf(rows(page).first(), /agent-1.*Paused/s);
    expect(new URL(page.url()).hash).toBe('#/?state=paused');
    await textOf(page.locator('.tab-paused'), /Paused/);
    expect(await page.locator('.tab-paused').getAttribute('aria-current')).toBe('page');
    expect(await page.getByRole('button', { name: 'Next →' }).isHidden()).toBe(true);

    // Back to all, then search: one session near the end of the order (a second scan call).
    await page.locator('.tab-all').click();
    await textOf(page.locator('#sessions-summary'), /20,002 sessions · 1 paused/);
    await page.getByLabel('Search ids').fill('S-00042');
    await page.getByRole('button', { name: 'Search' }).click();
    await textOf(page.locator('#sessions-summary'), /1 match for “S-00042”/);
    expect(await rows(page).count()).toBe(1);
    expect(await firstRow(page)).toBe(id(42));
    expect(new URL(page.url()).hash).toBe('#/?q=S-00042');
    // Part of many ids (10,000 of them): a full page of matches, and Next goes on.
    await page.getByLabel('Search ids').fill('s-1');
    await page.getByRole('button', { name: 'Search' }).click();
    await textOf(page.locator('#sessions-summary'), /50 matches for “s-1” so far/);
    expect(await rows(page).count()).toBe(50);
    expect(await firstRow(page)).toBe(id(N - 1));
    await page.getByRole('button', { name: 'Next →' }).click();
    await textOf(rows(page).first(), new RegExp(id(N - 51)));
    await textOf(page.locator('.pager-where'), /Page 2/);

    // A search nothing matches: every session looked at, none shown.
    await page.getByLabel('Search ids').fill('zzz');
    await page.getByRole('button', { name: 'Search' }).click();
    await textOf(page.locator('.empty-title'), /^No sessions match$/);
    expect(await rows(page).count()).toBe(0);
    await textOf(page.locator('#sessions-summary'), /^0 matches for “zzz” · /);

    // By agent: the one session of an agent, and the state filter kept with it.
    await page.getByLabel('Search ids').fill('');
    await page.getByLabel('Agent id', { exact: true }).fill(AGENTS[1]!.id);
    await page.getByRole('button', { name: 'Search' }).click();
    await waitFor(async () => (await firstRow(page)) === AGENTS[1]!.id, 20_000, 'agent row');
    expect(await rows(page).count()).toBe(1);

    // A session open: each poll asks for it, the list's page and health.
    await page.getByRole('link', { name: AGENTS[1]!.id }).click();
    await textOf(page.locator('.session-title'), /agent-2/);
    const open = await askedOver(page, 3);
    const allowed = [
      `/api/sessions/${AGENTS[1]!.id}`,
      '/api/health',
      `/api/sessions?agent=${AGENTS[1]!.id}&limit=50`,
    ];
    expect(open.filter((p) => !allowed.includes(p) && !p.includes('/events?'))).toEqual([]);
    for (const path of allowed) expect(open.filter((p) => p === path)).toHaveLength(3);

    // Hidden (as a background tab is), the page asks nothing after the poll in flight, while
    // another tab polls three times; shown again, it polls at once.
    const visibility = (state: string) =>
      page.evaluate(`Object.defineProperty(document, 'visibilityState', {
        configurable: true, get: () => '${state}' });
        document.dispatchEvent(new Event('visibilitychange'))`);
    const fromA: string[] = [];
    page.on('request', (r) => void (apiPath(r) && fromA.push(apiPath(r) as string)));
    await visibility('hidden');
    const other = await context.newPage();
    await other.goto(pageUrl(g));
    await signIn(other, ADMIN);
    for (let i = 0; i < 3; i++)
      await other.waitForRequest((r) => r.url().endsWith('/api/health'), { timeout: 20_000 });
    expect(fromA.filter((p) => p === '/api/health').length).toBeLessThanOrEqual(1);
    const shown = page.waitForRequest((r) => r.url().endsWith('/api/health'), { timeout: 5_000 });
    await visibility('visible');
    await shown;
    expect(errors).toEqual([]);
  }, 120_000);
});
