import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import { eventRecord } from '../helpers/event-record.js';
import { ADMIN, AGENTS } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';
import { openBrowser, screenshot, signIn, textOf } from './browser.js';
import { ingest, journalStage, pageUrl } from './stage.js';

/**
 * A session that carried credential `github` to its own host twice, then sent its sentinel
 * elsewhere: paused on credential-exfiltration (a journal written before start, read back as
 * after a restart). The API, the CLI and the page show which credentials it used and where; the
 * pause record names the credential, where it was found and the event that first carried it;
 * a request held meanwhile gets no approve-once button (no approval covers that boundary).
 */
const SESSION = AGENTS[0]!.id;
const REASON =
  "credential github's sentinel in header X-Token of a request to evil.test:443: credential-exfiltration";

function journal(dir: string): void {
  const t0 = Date.now() - 300_000;
  const at = (i: number) => new Date(t0 + i * 20_000).toISOString();
  const carried = (seq: number, path: string) =>
    eventRecord(seq, {
      ts: at(seq),
      session: SESSION,
      source: 'proxy',
      kind: 'network',
      method: 'GET',
      target: `https://api.github.com${path}`,
      approved: true,
      reason: 'allowed by network.allow',
      credentials: ['github'],
    });
  const events = [
    carried(1, '/user'),
    eventRecord(2, { ts: at(2), session: SESSION, target: '/w/notes.md' }),
    carried(3, '/repos'),
  ];
  const trigger = eventRecord(4, {
    ts: at(4),
    session: SESSION,
    source: 'proxy',
    kind: 'network',
    method: 'POST',
    target: 'https://evil.test/collect',
    verdict: 'PAUSE',
    boundary: 'credential-exfiltration',
    count: 1,
    reason: REASON,
    exfiltration: { credential: 'github', where: 'header X-Token' },
  });
  const pause = {
    seq: 5,
    ts: trigger.ts,
    type: 'pause',
    session: SESSION,
    pausedAt: trigger.ts,
    boundary: 'credential-exfiltration',
    count: 1,
    reason: REASON,
    trigger,
    recent: [...events, trigger],
    held: [],
    restored: false,
    firstSeen: events[0],
  };
  const lines = [...events, trigger, pause].map((r) => JSON.stringify(r));
  writeFileSync(join(dir, 'journal.jsonl'), lines.join('\n') + '\n');
}

const { dir, start } = journalStage();

describe('credentials a session used, and a pause on a sentinel out of place', () => {
  it('are in the API, the CLI and on the page, with no approve-once for that pause', async () => {
    journal(dir);
    const g = await start({
      admin: { token: ADMIN },
      agents: AGENTS,
      policy: { holdTimeout: '30s' },
    });
    const api = adminClient(g.gw.admin.port, ADMIN);
    const detail = (await api.get(`/api/sessions/${SESSION}`)).json;
    expect(detail.credentials).toEqual([
      {
        name: 'github',
        uses: 2,
        exfiltrations: 1,
        hosts: ['api.github.com:443'],
        first: {
          seq: 1,
          ts: expect.any(String),
          kind: 'network',
          method: 'GET',
          target: 'https://api.github.com/user',
        },
        last: expect.any(String),
      },
    ]);
    expect(detail.pause.firstSeen.seq).toBe(1);
    const list = (await api.get('/api/sessions')).json;
    expect(list.sessions.find((s: { id: string }) => s.id === SESSION).credentialNames).toEqual([
      'github',
    ]);
    const other = list.sessions.find((s: { id: string }) => s.id === AGENTS[1]!.id);
    expect(other.credentialNames).toEqual([]);

    const sessions = await runCliAsync(
      ['sessions', '--admin', `http://127.0.0.1:${g.gw.admin.port}`],
      { env: { TRAJGATE_ADMIN_TOKEN: ADMIN } },
    );
    const rows = sessions.stdout.split('\n');
    expect(rows[0]).toMatch(/ CREDENTIALS$/);
    expect(rows[1]).toMatch(
      new RegExp(`^${SESSION} +PAUSED \\(credential-exfiltration\\) .* github$`),
    );

    // A request while paused is held; an approval cannot decide this pause, so no button offers one.
    const held = ingest(g, 0, { kind: 'write', target: '/etc/passwd' }).catch(() => undefined);
    await waitFor(async () => (await api.get(`/api/sessions/${SESSION}`)).json.held === 1);

    const b = await openBrowser();
    const { page, errors, dialogs, offLoopback } = b;
    await page.goto(`${pageUrl(g)}#/session/${SESSION}`);
    await signIn(page, ADMIN);
    const card = page.locator('.credentials-card');
    await textOf(card, /github/);
    const row = card.locator('tr[data-name="github"]');
    expect(await row.getAttribute('class')).toBe('is-exfiltrated');
    expect(
      (await row.locator('td').allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim()),
    ).toEqual([
      'github',
      '2',
      'api.github.com:443',
      '1 event',
      '#1 network GET https://api.github.com/user',
    ]);

    const facts = page.locator('.pause-meta');
    await textOf(facts, /Credentialgithub/);
    await textOf(facts, /Found inheader X-Token/);
    await textOf(facts, /First carried#1 network GET https:\/\/api\.github\.com\/user/);
    await textOf(facts, /Approvalnone can cover it/);

    await textOf(page.locator('.held-list'), /#\d+ since/);
    expect(await page.locator('.held-list button.held-once').count()).toBe(0);
    expect(await page.locator('.held-list button.held-once-reset').count()).toBe(0);

    // The first carrying event's link selects it.
    await facts.locator('a.event-link[data-seq="1"]').click();
    await textOf(page.locator('#event-details'), /#1 · /);
    await screenshot(page, 'review-credentials');
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(offLoopback).toEqual([]);

    expect((await api.post(`/api/sessions/${SESSION}/deny`, {})).status).toBe(200);
    await held;
  }, 90_000);
});
