import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { ADMIN, reviewStage } from '../helpers/review-story.js';
import { tempDir } from '../helpers/tmp.js';
import { openBrowser, signIn, textOf } from './browser.js';
import { ingest, pageUrl } from './stage.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The review page against bad input: hostile event text (agents choose their targets), no or
 * a wrong token, an admin API that goes down and comes back; and the page's own HTTP headers.
 */
const { start } = await reviewStage();

const HOSTILE = {
  img: '<img src=x onerror="window.__pwned=1">',
  script: '<script>window.__pwned=2</script>',
  svg: '/tmp/<svg onload="window.__pwned=3">/x',
  network: 'http://127.0.0.1:9/<img/src=x/onerror=alert(4)>',
};

describe('hostile event text', () => {
  it('renders targets with HTML and script as inert text', async () => {
    const [g, api] = await start();
    await ingest(g, 0, { kind: 'read', target: HOSTILE.img });
    await ingest(g, 0, { kind: 'command', target: HOSTILE.script });
    await ingest(g, 0, { kind: 'network', target: HOSTILE.network });
    // a write outside the workspace pauses at once; its own call is held
    const held = ingest(g, 0, { kind: 'write', target: HOSTILE.svg }).catch(() => null);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    const canvas = page.locator('canvas.timeline-canvas');
    await waitFor(async () => (await canvas.getAttribute('data-events')) === '4');
    const recent = page.locator('.pause-card tbody');
    await textOf(recent, /window\.__pwned=3/);

    // shown literally, in the table, the held list, the details and the approve form
    const targets = await page.locator('.pause-card tbody .col-target').allTextContents();
    // Relative names are shown with the path they were resolved to in the workspace.
    const inWs = (t: string) => `${t} → ${join(g.gw.config.workspace, t)}`;
    expect(targets).toEqual([
      inWs(HOSTILE.img),
      inWs(HOSTILE.script),
      HOSTILE.network,
      HOSTILE.svg,
    ]);
    await textOf(page.locator('.held-card'), /write \/tmp\/<svg onload="window\.__pwned=3">\/x/);
    await textOf(page.locator('#event-details'), /<svg onload="window\.__pwned=3">/);
    const pattern = page.getByLabel('Pattern', { exact: true });
    await waitFor(async () => (await pattern.inputValue()) === HOSTILE.svg, 20_000, 'suggestion');
    expect(await page.getByLabel('Kind').inputValue()).toBe('write');
    await canvas.focus();
    await page.keyboard.press('Home');
    await textOf(page.locator('#event-details'), /<img src=x onerror="window\.__pwned=1">/);
    await page.keyboard.press('ArrowRight');
    await textOf(page.locator('#event-details'), /<script>window\.__pwned=2<\/script>/);
    // and in the tooltip: hover the read lane's only mark
    const box = (await canvas.boundingBox())!;
    const tip = page.locator('.timeline-tip');
    const readLane = box.y + 24 + 3 * 34 + 17;
    for (let x = 112; x < box.width - 10 && !(await tip.isVisible()); x += 3)
      await page.mouse.move(box.x + x, readLane);
    expect(await tip.textContent()).toContain(HOSTILE.img);

    // nothing ran and no element came from the payloads (a negative check: nothing runs within
    // 300 ms; a failed image load, the first to fire, comes at once)
    await new Promise((r) => setTimeout(r, 300));
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('img[src="x"], svg[onload], [onerror], [onload]').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1); // app.js
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
    await api.post('/api/sessions/agent-1/deny');
    await held;
  }, 60_000);

  it('proposes a target with glob characters escaped, and the approval covers it', async () => {
    const [g, api] = await start();
    // a file named "*": proposed verbatim, it would approve every file in /tmp
    const held = ingest(g, 0, { kind: 'write', target: '/tmp/*' });
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
    const { page, errors } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    const pattern = page.getByLabel('Pattern', { exact: true });
    await waitFor(async () => (await pattern.inputValue()) !== '');
    expect(await pattern.inputValue()).toBe('/tmp/\\*');
    await page.getByRole('button', { name: 'Approve pattern…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve' }).click();
    await textOf(page.locator('#action-message'), /Approved write \/tmp\/\\\*/);
    await api.post('/api/sessions/agent-1/resume');
    expect((await held).json).toMatchObject({ verdict: 'ALLOW' });
    expect(
      g
        .records()
        .filter((r) => r.type === 'event')
        .at(-1),
    ).toMatchObject({
      target: '/tmp/*',
      approved: true,
    });
    expect(errors).toEqual([]);
  }, 60_000);
});

describe('tokens', () => {
  it('asks for the token, makes no API call without it, and shows no data for a wrong one', async () => {
    const [g] = await start();
    await ingest(g, 0, { kind: 'read', target: 'README.md' });
    const { page, errors } = await openBrowser();
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/')) apiCalls.push(r.url());
    });
    await page.goto(pageUrl(g));
    await page.getByLabel('Admin token').waitFor();
    // a negative check: no API call within more than one poll period (1 s)
    await new Promise((r) => setTimeout(r, 1_200));
    expect(apiCalls).toEqual([]);
    expect(await page.locator('#conn').textContent()).toContain('Not signed in');

    await signIn(page, 'not-the-admin-token');
    await textOf(page.locator('#login-error'), /refused this token \(401 Unauthorized\)/);
    expect(apiCalls.length).toBeGreaterThan(0);
    expect(await page.locator('#view').innerHTML()).toBe('');
    expect(await page.locator('body').textContent()).not.toContain('agent-1');
    expect(await page.evaluate('sessionStorage.length')).toBe(0);

    // the right token: data; a token that stops working (rotated): back to the form, no data
    await signIn(page, ADMIN);
    await textOf(page.locator('table.sessions'), /agent-1/);
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
    expect(await page.locator('#login-error').isVisible()).toBe(false);
    await page.evaluate('sessionStorage.setItem("trajgate.adminToken", "rotated")');
    await page.locator('#login-error').waitFor({ state: 'visible', timeout: 20_000 });
    await textOf(page.locator('#login-error'), /refused this token/);
    expect(await page.locator('#view').innerHTML()).toBe('');
    expect(errors.filter((e) => !/401/.test(e))).toEqual([]);
  }, 60_000);

  it('forgets the token on request', async () => {
    const [g] = await start();
    const { page } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    await textOf(page.locator('#sessions-summary'), /2 sessions/);
    await page.getByRole('button', { name: 'Forget token' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    expect(await page.locator('#view').innerHTML()).toBe('');
  }, 60_000);
});

describe('API down', () => {
  const dir = tempDir(); // at collection, so that its cleanup runs after the file
  it('says the API is down, retries, and recovers when it is back', async () => {
    const config = (admin: number) => ({
      agents: [{ id: 'agent-1', token: 'agent-1-token-0123456789abcdef' }],
      admin: { token: ADMIN },
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: `127.0.0.1:${admin}` },
    });
    let g: TestGateway | null = await startTestGateway(config(0), { dir });
    const port = g.gw.admin.port;
    try {
      const { page } = await openBrowser();
      await page.goto(pageUrl(g));
      await signIn(page, ADMIN);
      await textOf(page.locator('table.sessions'), /agent-1/);
      await g.stop();
      g = null;
      const banner = page.locator('#banner');
      await textOf(banner, /admin API is down or unreachable .*Retrying every 2 s — attempt 1/);
      await textOf(page.locator('#conn'), /API down · retrying/);
      await textOf(banner, /attempt 2/); // it does retry
      expect(await page.locator('table.sessions').textContent()).toContain('agent-1'); // stale, kept

      g = await startTestGateway(config(port), { dir });
      await waitFor(async () => !(await banner.isVisible()), 20_000, 'banner gone');
      await textOf(page.locator('#conn'), /Live/);
    } finally {
      await g?.stop();
    }
  }, 60_000);
});

describe('the page over HTTP', () => {
  it('serves the page and its files without the token, with strict headers; the API still needs it', async () => {
    const [g] = await start();
    const base = `http://127.0.0.1:${g.gw.admin.port}`;
    const get = async (path: string, method = 'GET') => {
      const res = await request(`${base}${path}`, {
        method: method as 'GET',
        headersTimeout: 30_000,
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    };
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toMatch(
      /default-src 'self'; script-src 'self'/,
    );
    expect(page.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('<script type="module" src="app.js"></script>');
    expect(page.text).not.toMatch(/<script>|<style>| on\w+=/); // no inline script or style
    for (const [path, type] of [
      ['/app.js', 'text/javascript; charset=utf-8'],
      ['/page.css', 'text/css; charset=utf-8'],
      ['/favicon.svg', 'image/svg+xml'],
      ['/index.html', 'text/html; charset=utf-8'],
    ]) {
      const res = await get(path as string);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type']).toBe(type);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    const head = await get('/', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    // the page's routes hold no data; everything else still asks for the token
    for (const path of [
      '/api/sessions',
      '/metrics',
      '/missing.js',
      '/%2e%2e/package.json',
      '/app.ts',
    ])
      expect((await get(path)).status, path).toBe(401);
    expect((await get('/', 'POST')).status).toBe(401);
    const api = adminClient(g.gw.admin.port, ADMIN);
    expect((await api.get('/missing.js')).status).toBe(404);
    expect((await api.get('/api/sessions')).status).toBe(200);
  });
});
