import { describe, expect, it, vi } from 'vitest';
import { ADMIN, reviewStage } from '../helpers/review-story.js';
import { openBrowser, signIn, textOf, until } from './browser.js';
import { ingest, pageUrl } from './stage.js';

/** The journal's writes fail with ENOSPC while `disk.full` (see journal-outage.test.ts). */
const disk = vi.hoisted(() => ({ full: false }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const writeSync = ((...args: unknown[]) => {
    if (disk.full) {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }
    return (fs.writeSync as (...a: unknown[]) => number)(...args);
  }) as typeof fs.writeSync;
  return { ...fs, writeSync, default: { ...fs, writeSync } };
});

const { start } = await reviewStage();

describe('a journal that cannot be written, on the review page', () => {
  it('shows a banner with the error while writes fail, gone once one succeeds', async () => {
    const [g, api] = await start();
    console.log("started");
    const { page, errors } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    console.log("signed");
    const banner = page.locator('#journal-banner');
    await until(async () => (await api.get('/api/health')).json.status === 'ok');
    expect(await banner.isHidden()).toBe(true);

    console.log("hidden ok");
    disk.full = true;
    expect((await ingest(g, 0, { kind: 'command', target: '/bin/true' })).status).toBe(503);
    console.log("ingested", JSON.stringify((await api.get("/api/health")).json));
    for (let i = 0; i < 5; i++) { await new Promise((r) => setTimeout(r, 1000)); console.log("banner", await page.evaluate(() => [document.getElementById("journal-banner")?.hidden, document.getElementById("journal-banner")?.textContent, document.getElementById("conn-text")?.textContent, document.getElementById("banner")?.textContent])); }
    await textOf(banner, /journal cannot be written \(ENOSPC: no space left on device, write\)/);
    expect(await banner.textContent()).toMatch(/refuses every request with 503/);
    expect(await banner.isVisible()).toBe(true);

    disk.full = false;
    expect((await ingest(g, 0, { kind: 'command', target: '/bin/true' })).status).toBe(200);
    await until(() => banner.isHidden(), 5_000, 'banner hidden');
    expect(errors).toEqual([]);
  });
});
