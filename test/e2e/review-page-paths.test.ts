import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN, AGENTS } from '../helpers/review-story.js';
import { tempDir } from '../helpers/tmp.js';
import { openBrowser, signIn, textOf } from './browser.js';
import { ingest, journalStage, pageUrl } from './stage.js';

/**
 * In real headless Chromium: a path is shown as it was resolved when judged, beside what the
 * agent sent, wherever the two differ (a relative name, a symlink, `..`): the verdict is about
 * the resolved path, and a reviewer shown only `link/b.txt` would judge another file.
 */
const { ws, start } = journalStage();
const outside = tempDir();
mkdirSync(join(ws, 'src'));
symlinkSync(outside, join(ws, 'link'));

describe('paths on the review page', () => {
  it('the row and the detail show the resolved path where it differs', async () => {
    const g = await start({ agents: AGENTS, admin: { token: ADMIN }, policy: { pause: 'block' } });
    const write = (target: string) => ingest(g, 0, { kind: 'write', target });
    expect((await write('src/notes.txt')).json.verdict).toBe('ALLOW');
    expect((await write(join(ws, 'same.txt'))).json.verdict).toBe('ALLOW');
    expect((await write('link/b.txt')).json).toMatchObject({ verdict: 'PAUSE' });

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    await page.getByRole('link', { name: 'agent-1' }).click();
    const rows = page.locator('table.events tbody tr');
    const target = (text: string) => rows.filter({ hasText: text }).locator('.col-target');
    await textOf(target('notes'), new RegExp(`^src/notes\\.txt → ${join(ws, 'src/notes.txt')}$`));
    await textOf(target('link/b'), new RegExp(`^link/b\\.txt → ${join(outside, 'b.txt')}$`));
    await textOf(target('same'), new RegExp(`^${join(ws, 'same.txt')}$`));

    await rows.filter({ hasText: 'link/b' }).click();
    await textOf(
      page.locator('#event-details .resolved'),
      new RegExp(`^${join(outside, 'b.txt')}$`),
    );
    expect({ dialogs, errors, offLoopback }).toEqual({ dialogs: [], errors: [], offLoopback: [] });
  }, 60_000);
});
