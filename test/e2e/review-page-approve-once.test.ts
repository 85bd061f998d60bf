import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { ADMIN, auth, reviewStage } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';
import { openBrowser, signIn, textOf } from './browser.js';
import { pageUrl } from './stage.js';

/**
 * The review page's "Approve once" on one held request: of two held requests,
 * the one clicked reaches its upstream; the session stays paused and the other stays held, never
 * judged again, until a deny answers it 403. Loopback only.
 */
const { other, start, pause } = await reviewStage();

describe('review page: approve once', () => {
  it('forwards only the held request it was clicked on', async () => {
    const [g, api] = await start();
    const { held: get } = await pause(g, api, 0);
    const post = curl([...auth(0), '-x', g.proxyUrl, '-d', 'a=1&b=2', `${other.url}/upload`]);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 2);
    const heldNow = (await api.get('/api/sessions/agent-1')).json.heldRequests as {
      rid: number;
      what: string;
    }[];
    const postRid = heldNow.find((h) => h.what.startsWith('POST'))!.rid;
    const getRid = heldNow.find((h) => h.what.startsWith('GET'))!.rid;

    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    const rows = page.locator('.held-card li.held');
    await waitFor(async () => (await rows.count()) === 2, 20_000, 'two held requests');
    await textOf(page.locator('.held-card'), /POST http:\/\/127\.0\.0\.1:\d+\/upload \(7 bytes\)/);

    await page.locator(`button.held-once[data-rid="${postRid}"]`).click();
    const dialog = page.getByRole('dialog');
    const asked = await textOf(dialog, /Approve this request once\?/);
    expect(asked).toContain(`Approved once#${postRid} POST ${other.url}/upload (7 bytes)`);
    expect(asked).toContain(`Stays held#${getRid} GET ${other.url}/second-0`);
    expect(asked).toContain(
      'The other held request stays held: it is judged again when the session is resumed.',
    );
    await dialog.getByRole('button', { name: 'Approve once' }).click();
    await textOf(
      page.locator('#action-message'),
      new RegExp(
        `Approved once, forwarded: #${postRid} POST .*/upload \\(7 bytes\\); still held, the session paused: #${getRid} GET .*/second-0\\.`,
      ),
    );

    expect((await post).status).toBe(200);
    expect(other.seen.map((r) => [r.method, r.url, r.body])).toContainEqual([
      'POST',
      '/upload',
      'a=1&b=2',
    ]);
    // The GET stays held by the one pause, not judged again; the page shows it still held.
    const view = (await api.get('/api/sessions/agent-1')).json;
    expect(view.state).toBe('paused');
    expect(view.heldRequests.map((h: { rid: number }) => h.rid)).toEqual([getRid]);
    await textOf(page.locator('.held-card'), /Held requests \(1\)/);
    expect(g.records().filter((r) => r.type === 'pause')).toHaveLength(1);
    // Its one event is the PAUSE it was held on: nothing was judged for it since.
    const getEvents = g
      .records()
      .filter((r): r is EventRecord => r.type === 'event' && r.target.endsWith('/second-0'));
    expect(getEvents.map((e) => [e.verdict, e.held === true])).toEqual([['PAUSE', false]]);
    expect(other.seen.some((r) => r.url === '/second-0')).toBe(false);
    expect(g.records().find((r) => r.type === 'resume')).toMatchObject({ once: [postRid] });

    await api.post('/api/sessions/agent-1/deny');
    expect((await get).status).toBe(403);
    expect(other.seen.some((r) => r.url === '/second-0')).toBe(false);
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);

  it('approve once and reset counts: the request goes, the session resumes at zero, the next crossing is a REVIEW', async () => {
    const [g, api] = await start();
    const { held } = await pause(g, api, 0);
    const rid = (await api.get('/api/sessions/agent-1')).json.heldRequests[0].rid as number;
    const { page, dialogs, errors, offLoopback } = await openBrowser();
    await page.goto(`${pageUrl(g)}#/session/agent-1`);
    await signIn(page, ADMIN);
    await page.locator(`button.held-once-reset[data-rid="${rid}"]`).click();
    const dialog = page.getByRole('dialog');
    const asked = await textOf(dialog, /Approve this request once and reset the counts\?/);
    expect(asked).toContain(`Approved once#${rid} GET ${other.url}/second-0`);
    expect(asked).toContain('its next unapproved crossing is a REVIEW, not a pause');
    await dialog.getByRole('button', { name: 'Approve once and reset' }).click();
    await textOf(
      page.locator('#action-message'),
      new RegExp(
        `Approved once, forwarded: #${rid} GET .*/second-0; resumed with the counts reset: 0 other held request\\(s\\) judged again\\.`,
      ),
    );
    expect((await held).status).toBe(200);
    await textOf(page.locator('.session-head .badge'), /^Active$/);
    expect((await api.get('/api/sessions/agent-1')).json).toMatchObject({
      state: 'active',
      counts: {},
    });
    const next = await curl([...auth(0), '-x', g.proxyUrl, `${other.url}/third`]);
    expect(next.status).toBe(403);
    expect(next.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(offLoopback).toEqual([]);
  }, 60_000);
});
