import { describe, expect, it } from 'vitest';
import { lineCount, viaProxy } from '../helpers/admin.js';
import { decisionStage, follow, ofType, state } from '../helpers/decision-links.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Decisions that can wait: a pause's links last as long as the pause (up to notify.linkTtl),
 * not the hold. After the hold timed out, approve once resumes instead (it never lets go as
 * approved a request nobody was shown); a link of an ended pause says how it ended and never
 * acts on a later pause; "approve and reset counts" forwards what it was made for, approved
 * once, and resumes with the counts at zero.
 */
const { other, auth, paused } = await decisionStage();

const heldNow = async (api: { get(p: string): Promise<{ json: any }> }) =>
  (await api.get('/api/sessions/agent-1')).json.held as number;

describe('decision links outlive the hold', () => {
  it('after the hold timed out, approve once resumes instead and says so; then it is used', async () => {
    const { g, api, held, links } = await paused('1s');
    expect((await held).status).toBe(403);
    expect(await state(api)).toBe('paused');
    // Every link still answers: the pause is undecided.
    for (const url of [links.deny, links.approvePattern, links.approveReset])
      expect((await follow(url, 'GET')).status).toBe(200);
    const shown = await follow(links.approveOnce, 'GET', true);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('<h1>Approve and resume?</h1>');
    expect(shown.text).toContain('its hold timed out and the agent was refused');
    expect((await follow(links.approveOnce, 'GET')).json).toMatchObject({ instead: 'resume' });

    const done = await follow(links.approveOnce, 'POST', true);
    expect(done.status).toBe(200);
    expect(done.text).toContain('nothing was approved once; the session was resumed instead');
    expect(await state(api)).not.toBe('paused');
    const resumes = ofType(g, 'resume');
    expect(resumes).toEqual([expect.objectContaining({ by: 'link', reset: false })]);
    expect(resumes[0]!.once).toBeUndefined();

    const again = await follow(links.approveOnce, 'POST', true);
    expect(again.status).toBe(410);
    expect(again.text).toContain('ended: the session was resumed by a decision link');
  });

  it('approve once after the timeout lets nothing go as approved that was not shown', async () => {
    const { g, api, held, links } = await paused('1s');
    expect((await held).status).toBe(403);
    // A request the notification never showed, held by the same pause.
    const later = viaProxy(g.proxyUrl, `${other.url}/v1/later`, auth);
    await waitFor(async () => (await heldNow(api)) === 1);
    const done = await follow(links.approveOnce, 'POST');
    expect(done.json).toMatchObject({ decided: 'once', instead: 'resume', released: 1, once: [] });
    // Judged again with the counts kept: it crosses again and pauses the session anew.
    expect((await later).status).toBe(403);
    expect(other.seen.some((r) => r.url === '/v1/later')).toBe(false);
    const events = ofType(g, 'event').filter((e) => e.target === `${other.url}/v1/later`);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => !e.approved)).toBe(true);
    expect(await state(api)).toBe('paused');
  });

  it('a link of an ended pause says how it ended and never acts on the later pause', async () => {
    const { g, api, held, links, hook } = await paused();
    // Nobody approved GET /v1/x: judged again on resume it pauses the session again at once,
    // and that later pause (its own notification) holds it.
    const resumed = await api.post('/api/sessions/agent-1/resume');
    expect(resumed.json.pausedAgain).toMatchObject({ trigger: { target: `${other.url}/v1/x` } });
    await waitFor(async () => hook.deliveries.length === 2 && (await heldNow(api)) === 1);
    const before = lineCount(g.journalPath);
    for (const url of [links.deny, links.approveOnce, links.approveReset]) {
      const res = await follow(url, 'POST', true);
      expect(res.status).toBe(410);
      expect(res.text).toContain('ended: the session was resumed by operator');
      expect(res.text).toContain('the session paused again at');
    }
    expect(lineCount(g.journalPath)).toBe(before);
    expect(await heldNow(api)).toBe(1);

    // The later pause's own "approve and reset counts": the request it was made for goes as
    // approved, once; the counts restart, so the next unapproved crossing is a REVIEW again.
    const later = hook.deliveries[1]!.body.links;
    expect((await follow(later.approveReset, 'GET', true)).text).toContain(
      'Approve and reset counts?',
    );
    const done = await follow(later.approveReset, 'POST');
    expect(done.json).toMatchObject({ decided: 'reset', session: 'agent-1', released: 0 });
    expect(done.json.once).toEqual([expect.objectContaining({ what: `GET ${other.url}/v1/x` })]);
    expect((await held).status).toBe(200);
    expect(ofType(g, 'resume').slice(-2)).toEqual([
      expect.objectContaining({ by: 'link', once: [expect.any(Number)], reset: false }),
      expect.objectContaining({ by: 'link', reset: true }),
    ]);
    expect(ofType(g, 'event').at(-1)).toMatchObject({
      target: `${other.url}/v1/x`,
      approved: true,
    });
    expect(await state(api)).toBe('active');
    const after = await viaProxy(g.proxyUrl, `${other.url}/v1/after`, auth);
    expect(after.status).toBe(403);
    expect(ofType(g, 'event').at(-1)).toMatchObject({
      target: `${other.url}/v1/after`,
      verdict: 'REVIEW',
      count: 1,
    });
    expect(hook.deliveries[1]!.body.text).toContain('|Approve and reset counts>');
  });
});
