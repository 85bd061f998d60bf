import { describe, expect, it } from 'vitest';
import { ADMIN, AGENTS } from '../helpers/review-story.js';
import { tempDir } from '../helpers/tmp.js';
import { openBrowser, screenshot, signIn, textOf } from './browser.js';
import { ingest, journalStage, pageUrl } from './stage.js';

/**
 * In real headless Chromium: a reviewer reads what each command ran. The
 * pause record's rows show the command line under its folder, the trigger names it, and the
 * event detail shows it whole (a heredoc's lines kept); a character that would hide or reorder
 * text shows as an escape, and the secret the command held is nowhere on the page.
 */
const { ws, start } = journalStage();
const SECRET = 'hunter2-page-0123456789';
const outside = tempDir();

describe('command lines on the review page', () => {
  it('the row, the trigger and the detail show the command line; no secret on the page', async () => {
    const g = await start({ agents: AGENTS, admin: { token: ADMIN }, policy: { pause: 'block' } });
    const run = (target: string, command: string) =>
      ingest(g, 0, { kind: 'command', target, command });
    expect((await run(ws, 'npm test')).status).toBe(200);
    expect(
      (await run(ws, `curl -H 'Authorization: Bearer ${SECRET}' https://a.example/`)).status,
    ).toBe(200);
    expect((await run(ws, 'echo \u202etxt.exe\u001b[2J')).status).toBe(200);
    expect((await run(ws, "cat <<'EOF' > notes.md\nline one\nline two\nEOF")).status).toBe(200);
    const paused = await run(outside, 'rm -rf /srv/data');
    expect(paused.json).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace' });

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    await page.getByRole('link', { name: 'agent-1' }).click();
    const rows = page.locator('table.events tbody tr');
    const trigger = rows.filter({ hasText: 'rm -rf' });
    await textOf(trigger.locator('.col-command'), /^\$ rm -rf \/srv\/data$/);
    await textOf(trigger.locator('.col-target'), new RegExp(`^${outside}$`));
    await textOf(rows.filter({ hasText: 'npm' }).locator('.col-command'), /^\$ npm test$/);
    await textOf(
      rows.filter({ hasText: 'curl' }).locator('.col-command'),
      /^\$ curl -H 'Authorization: \[redacted\]' https:\/\/a\.example\/$/,
    );
    // Escapes for what would reorder or hide text; a heredoc on one line in the row.
    await textOf(
      rows.filter({ hasText: 'txt' }).locator('.col-command'),
      /^\$ echo \\u202etxt\.exe\\u001b\[2J$/,
    );
    await textOf(
      rows.filter({ hasText: 'cat' }).locator('.col-command'),
      /^\$ cat <<'EOF' > notes\.md\\nline one\\nline two\\nEOF$/,
    );
    await textOf(page.locator('.facts'), /Trigger.*rm -rf \/srv\/data/);

    // The detail: the whole command line, its lines kept.
    await rows.filter({ hasText: 'cat' }).click();
    const command = page.locator('#event-details pre.command');
    await textOf(command, /^cat <<'EOF' > notes\.md\nline one\nline two\nEOF$/);
    await screenshot(page, 'review-command-line');

    const html = await page.content();
    expect(html).not.toContain(SECRET);
    expect(html).not.toContain('\u202e');
    expect({ dialogs, errors, offLoopback }).toEqual({ dialogs: [], errors: [], offLoopback: [] });
  });
});
