import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { eventRecord } from '../helpers/event-record.js';
import { ADMIN } from '../helpers/review-story.js';
import { openBrowser, screenshot, signIn, textOf } from './browser.js';
import type { Browsing } from './browser.js';
import { journalStage, pageUrl } from './stage.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A session paused by a sequence rule (a journal written before start, read back as after a
 * restart). The page draws the pair, the private key read (event 4) and the egress the rule
 * paused (event 7), as one arc, and each event's detail links to the other; the event's own
 * URL (what the webhook links) selects it. The CLI's tables name the rule and #4.
 */
const SESSION = 'coder-7';
const KEY = '/home/u/.ssh/id_ed25519';
const RULE = 'secret-then-egress';
const SEQUENCES = [
  {
    name: RULE,
    after: { kind: 'read', target: ['**/.ssh/**', '**/.env'] },
    then: { kind: 'network' },
    within: '1h',
    verdict: 'PAUSE',
  },
];

function journal(dir: string, ws: string): void {
  const t0 = Date.now() - 600_000;
  const steps: [string, string, Record<string, unknown>?][] = [
    ['read', join(ws, 'README.md')],
    ['command', join(ws, 'tests')],
    ['write', join(ws, 'src/report.ts')],
    ['read', KEY, { marks: [RULE] }],
    ['read', join(ws, 'src/report.ts')],
    ['command', join(ws, 'build')],
  ];
  const events: object[] = steps.map(([kind, target, extra], i) =>
    eventRecord(i + 1, {
      ts: new Date(t0 + i * 40_000).toISOString(),
      session: SESSION,
      kind,
      target,
      eventNo: i + 1,
      ...extra,
    }),
  );
  const trigger = {
    seq: 7,
    ts: new Date(t0 + 300_000).toISOString(),
    type: 'event',
    session: SESSION,
    source: 'proxy',
    kind: 'network',
    target: 'example.com:443',
    method: 'CONNECT',
    approved: false,
    verdict: 'PAUSE',
    boundary: RULE,
    count: 0,
    reason: `${RULE}: network to example.com:443 after #4 read ${KEY} (within 1h)`,
    rule: { name: RULE, after: 4 },
    eventNo: 7,
  };
  events.push(trigger);
  const pause = {
    seq: 8,
    ts: trigger.ts,
    type: 'pause',
    session: SESSION,
    pausedAt: trigger.ts,
    boundary: RULE,
    count: 0,
    reason: trigger.reason,
    trigger,
    recent: events.slice(-4),
    held: [],
    restored: false,
    after: events[3],
  };
  const lines = [...events, pause].map((r) => JSON.stringify(r));
  writeFileSync(join(dir, 'journal.jsonl'), lines.join('\n') + '\n');
}

/** The canvas pixels around (x, y) in CSS pixels, as [r, g, b] (a string: no DOM types here). */
function pixels(b: Browsing, x: number, y: number): Promise<[number, number, number][]> {
  return b.page.evaluate(`(() => {
    const c = document.querySelector('canvas.timeline-canvas');
    const dpr = c.width / c.getBoundingClientRect().width;
    const d = c.getContext('2d').getImageData(Math.round(${x} * dpr) - 2, Math.round(${y} * dpr) - 2, 5, 5).data;
    const out = [];
    for (let i = 0; i < d.length; i += 4) out.push([d[i], d[i + 1], d[i + 2]]);
    return out;
  })()`) as Promise<[number, number, number][]>;
}

/** --pair, #7c3aed. */
const isPairColour = ([r, g, b]: [number, number, number]) =>
  Math.abs(r - 0x7c) < 24 && Math.abs(g - 0x3a) < 24 && Math.abs(b - 0xed) < 24;

const { dir, ws, start } = journalStage();

describe('a pause by a sequence rule, on the review page and in the CLI', () => {
  it('draws the pair as an arc and links the two events both ways', async () => {
    journal(dir, ws);
    const g = await start({ admin: { token: ADMIN }, policy: { sequences: SEQUENCES } });
    const b = await openBrowser();
    const { page, errors, dialogs, offLoopback } = b;
    await page.goto(pageUrl(g));
    await signIn(page, ADMIN);
    await textOf(page.locator('table.sessions'), new RegExp(`${RULE} after #4 · since`));
    await page.getByRole('link', { name: SESSION }).click();
    const canvas = page.locator('canvas.timeline-canvas');
    await waitFor(async () => (await canvas.getAttribute('data-events')) === '7', 20_000, 'drawn');

    // the trigger is selected; its pair is the one drawn strong, and it is on the canvas
    const details = page.locator('#event-details');
    await textOf(details, /#7 · /);
    expect(await canvas.getAttribute('data-pairs')).toBe('4>7');
    expect(await canvas.getAttribute('data-pair')).toBe('4>7');
    expect(await canvas.getAttribute('aria-label')).toContain('1 rule pair');
    const [x = NaN, y = NaN] = (await canvas.getAttribute('data-pair-point'))!
      .split(',')
      .map(Number);
    expect((await pixels(b, x, y)).some(isPairColour)).toBe(true);
    // …and not where there is none: the empty "other" lane
    const box = (await canvas.boundingBox())!;
    expect((await pixels(b, box.width - 30, 26 + 34 * 4 + 10)).some(isPairColour)).toBe(false);

    // the detail names the rule and the earlier event, linked to its own URL
    await textOf(details, new RegExp(`Rule${RULE} · after #4 read ${KEY}`));
    const back = details.locator('a.event-link[data-seq="4"]');
    expect(await back.getAttribute('href')).toBe(`#/session/${SESSION}/event/4`);
    // the pause record: the rule, both events, the earlier one marked in its table
    const facts = page.locator('.pause-meta');
    await textOf(facts, new RegExp(`Trigger#7 CONNECT example\\.com:443Rule${RULE} · after #4`));
    expect(await facts.locator('a.event-link').count()).toBe(2);
    const earlierRow = page.locator('table.events tr[data-seq="4"]');
    expect(await earlierRow.getAttribute('class')).toBe('is-earlier');
    await screenshot(page, 'review-rule-pair');

    // following the link selects the earlier event, whose detail links forward to #7
    await back.click();
    await textOf(details, /#4 · /);
    await textOf(details, new RegExp(`Then${RULE} · #7 network CONNECT example\\.com:443`));
    expect(await canvas.getAttribute('data-pair')).toBe('4>7');
    await details.locator('a.event-link[data-seq="7"]').click();
    await textOf(details, /#7 · /);

    // an event's URL (as the webhook links it) opens the session with that event selected
    await page.goto(`${pageUrl(g)}#/session/${SESSION}/event/4`);
    await page.reload();
    await textOf(page.locator('#event-details'), /#4 · /);
    expect(await page.locator('canvas.timeline-canvas').getAttribute('data-pair')).toBe('4>7');
    await screenshot(page, 'review-rule-pair-earlier');
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(offLoopback).toEqual([]);

    // the CLI's tables: the rule and the earlier event's seq
    const op = (args: string[]) =>
      runCliAsync([...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
        cwd: ws,
        env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
      });
    const events = (await op(['events', SESSION])).stdout.split('\n');
    expect(events[1]).toMatch(
      new RegExp(`^7 +\\S+ +PAUSE: ${RULE} after #4 +network +CONNECT example\\.com:443 `),
    );
    const sessions = (await op(['sessions'])).stdout.split('\n');
    expect(sessions[1]).toMatch(new RegExp(`^${SESSION} +PAUSED \\(${RULE} after #4\\) `));
  }, 60_000);
});
