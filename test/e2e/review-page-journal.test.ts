import { describe, expect, it } from 'vitest';
import { fillDisk } from '../helpers/full-disk.js';
import { ADMIN, reviewStage } from '../helpers/review-story.js';
import { openBrowser, signIn, textOf } from './browser.js';
import { ingest, pageUrl } from './stage.js';
import { waitFor } from '../helpers/wait.js';

const { start } = await reviewStage();

describe('a journal that cannot be written, on the review page', () => {
  it('shows a banner with the error while writes fail, gone once one succeeds', async () => {
    const [g] = await start();
    const { page, errors } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    const banner = page.locator('#journal-banner');
    await textOf(page.locator('#conn-text'), /^Live/);
    expect(await banner.isHidden()).toBe(true);

    // The journal writer's descriptor on /dev/full, then back (test/helpers/full-disk.ts).
    const roomAgain = fillDisk(g.journalPath);
    expect((await ingest(g, 0, { kind: 'read', target: '/etc/hostname' })).status).toBe(503);
    // The OS error as os-error.ts tells it: the file, its key and what to do.
    await textOf(
      banner,
      /journal cannot be written \(ENOSPC: cannot write \S+journal\.jsonl \(journal\.path\): no space left on the device; free space on its filesystem/,
    );
    expect(await banner.textContent()).toMatch(/refuses every request with 503/);
    expect(await banner.isVisible()).toBe(true);

    roomAgain();
    expect((await ingest(g, 0, { kind: 'read', target: '/etc/hostname' })).status).toBe(200);
    await waitFor(() => banner.isHidden(), 20_000, 'banner hidden');
    expect(errors).toEqual([]);
  });
});
