import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lineCount, viaProxy } from '../helpers/admin.js';
import { decisionStage, follow, ofType, state } from '../helpers/decision-links.js';
import type { TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Decision links in pause notifications: each does its one action on its one pause, once,
 * without the admin token; GET only shows it; a used, expired or altered link does nothing
 * and journals nothing.
 */
const { other, auth, start, stopped, paused } = await decisionStage();

/** A link of a gateway that was restarted: its admin listener's new port. */
const onPort = (url: string, g: TestGateway) =>
  url.replace(/^http:\/\/127\.0\.0\.1:\d+/, `http://127.0.0.1:${g.gw.admin.port}`);

describe('decision links', () => {
  it('GET shows what a link would do (HTML and JSON) and changes nothing', async () => {
    const { g, api, held, links } = await paused();
    const before = lineCount(g.journalPath);
    for (const url of [links.approveOnce, links.approvePattern, links.deny]) {
      const page = await follow(url, 'GET', true);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      expect(page.text).toContain('<form method="post">');
      expect(page.text).toContain('agent-1');
      expect(page.text).toContain(`${other.url}/v1/x`);
      expect((await follow(url, 'HEAD')).status).toBe(200);
    }
    const json = await follow(links.approvePattern);
    expect(json.json).toMatchObject({
      session: 'agent-1',
      action: 'approve',
      trigger: { method: 'GET', target: `${other.url}/v1/x` },
      held: 1,
      approval: { pattern: `GET ${other.url}/v1/`, kind: 'network' },
    });
    expect(lineCount(g.journalPath)).toBe(before);
    expect(await state(api)).toBe('paused');
    expect((await api.get('/api/sessions/agent-1')).json.held).toBe(1);
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
  });

  it('approve once forwards the held request as approved, once; the session stays paused', async () => {
    const { g, api, held, links } = await paused();
    const done = await follow(links.approveOnce, 'POST');
    expect(done.status).toBe(200);
    const rid = ofType(g, 'pause')[0]!.trigger.seq;
    const what = `GET ${other.url}/v1/x`;
    expect(done.json).toEqual({
      decided: 'once',
      session: 'agent-1',
      released: 1,
      once: [{ rid, what, bytes: null }],
      judged: [],
      held: [],
    });
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(other.seen.some((r) => r.url === '/v1/x')).toBe(true);
    const [resume] = ofType(g, 'resume');
    expect(resume).toMatchObject({ session: 'agent-1', reset: false, once: [rid], by: 'link' });
    const again = ofType(g, 'event').filter((e) => e.target === `${other.url}/v1/x`);
    expect(again.map((e) => [e.verdict, e.approved])).toEqual([
      ['PAUSE', false],
      ['ALLOW', true],
    ]);
    expect(ofType(g, 'approve')).toEqual([]);
    expect(await state(api)).toBe('paused');

    // Nothing was approved beyond that request: the next one is held by the same pause.
    const later = viaProxy(g.proxyUrl, `${other.url}/v1/later`, auth);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
    expect(ofType(g, 'event').at(-1)).toMatchObject({
      target: `${other.url}/v1/later`,
      held: true,
      approved: false,
    });
    expect(ofType(g, 'pause')).toHaveLength(1);
    expect(other.seen.some((r) => r.url === '/v1/later')).toBe(false);

    // The pause is undecided: its approve-once link did what it names (it resumes nothing
    // either), its deny link answers the later request 403; then every link of it is used.
    const shown = await follow(links.approveOnce, 'GET', true);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain('already forwarded as approved');
    const denied = await follow(links.deny, 'POST');
    expect(denied.json).toEqual({ decided: 'deny', session: 'agent-1', released: 1 });
    expect((await later).status).toBe(403);
    expect(other.seen.some((r) => r.url === '/v1/later')).toBe(false);
    const before = lineCount(g.journalPath);
    for (const url of [links.approveOnce, links.approvePattern, links.deny]) {
      const reused = await follow(url, 'POST');
      expect(reused.status).toBe(410);
      expect(reused.json.error.code).toBe('E_LINK_USED');
    }
    expect(lineCount(g.journalPath)).toBe(before);
  });

  it('after a restart the journal gives the same state, and the links of a decided pause stay used', async () => {
    const { g, api, held, links, config, dir } = await paused();
    expect((await follow(links.approveOnce, 'POST')).status).toBe(200);
    expect((await held).status).toBe(200);
    expect((await follow(links.deny, 'POST')).status).toBe(200);
    const view = (await api.get('/api/sessions/agent-1')).json;
    expect(view).toMatchObject({ state: 'paused', counts: { network: 2 } });
    stopped();
    await g.stop();
    // The approve-once's resume record does not unpause: read back, the session is paused.
    const [g2, api2] = await start(config, dir);
    const after = (await api2.get('/api/sessions/agent-1')).json;
    expect(after).toMatchObject({ state: 'paused', counts: view.counts, pausedAt: view.pausedAt });
    // The link key was kept beside the journal: the link verifies, and says its pause is over.
    for (const url of [links.approveOnce, links.deny]) {
      const res = await follow(onPort(url, g2), 'POST');
      expect(res.status).toBe(410);
      expect(res.json.error.code).toBe('E_LINK_USED');
    }
  });

  it('a denial is remembered across a restart: the pause stays paused, its links used', async () => {
    const { g, held, links, config, dir } = await paused();
    expect((await follow(links.deny, 'POST')).status).toBe(200);
    expect((await held).status).toBe(403);
    stopped();
    await g.stop();
    const [g2, api2] = await start(config, dir);
    expect(await state(api2)).toBe('paused');
    const res = await follow(onPort(links.approveOnce, g2), 'POST');
    expect(res.status).toBe(410);
    expect(res.json.error.code).toBe('E_LINK_USED');
    expect(await state(api2)).toBe('paused');
  });

  it('approve pattern adds the suggested approval for the session and resumes it', async () => {
    const { g, api, held, links } = await paused();
    expect(links.suggestion).toEqual({ pattern: `GET ${other.url}/v1/`, kind: 'network' });
    const done = await follow(links.approvePattern, 'POST', true);
    expect(done.status).toBe(200);
    expect(done.text).toContain(`Approved GET ${other.url}/v1/`);
    expect((await held).status).toBe(200);
    const approvals = (await api.get('/api/sessions/agent-1')).json.approvals as any[];
    expect(approvals).toContainEqual(
      expect.objectContaining({ pattern: `GET ${other.url}/v1/`, session: 'agent-1' }),
    );
    expect(ofType(g, 'approve')).toEqual([
      expect.objectContaining({ session: 'agent-1', pattern: `GET ${other.url}/v1/`, by: 'link' }),
    ]);
    expect(ofType(g, 'resume')).toEqual([expect.objectContaining({ by: 'link', reset: false })]);
    expect((await viaProxy(g.proxyUrl, `${other.url}/v1/y`, auth)).status).toBe(200);
    const reused = await follow(links.approvePattern, 'POST', true);
    expect(reused.status).toBe(410);
    expect(reused.text).toContain(
      'this pause of session &#34;agent-1&#34; ended: the session was resumed by a decision link; the session runs',
    );
  });

  it('deny answers the held request 403; then every link of that pause is used', async () => {
    const { g, api, held, links } = await paused();
    const done = await follow(links.deny, 'POST');
    expect(done.json).toEqual({ decided: 'deny', session: 'agent-1', released: 1 });
    expect((await held).status).toBe(403);
    expect(ofType(g, 'deny')).toEqual([
      expect.objectContaining({ session: 'agent-1', by: 'link', released: 1 }),
    ]);
    // Still paused (a denial does not resume), yet this pause is decided.
    expect(await state(api)).toBe('paused');
    const before = lineCount(g.journalPath);
    for (const url of [links.deny, links.approveOnce, links.approvePattern]) {
      const reused = await follow(url, 'POST');
      expect(reused.status).toBe(410);
      expect(reused.json.error.code).toBe('E_LINK_USED');
    }
    expect(lineCount(g.journalPath)).toBe(before);
    expect(await state(api)).toBe('paused');
  });

  it('an altered or foreign link is refused 403 and does nothing', async () => {
    const { g, api, held, links } = await paused();
    const before = lineCount(g.journalPath);
    const [base, token] = links.deny.split('/decide/') as [string, string];
    const [payload, mac] = token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims[3] = 'once'; // a deny link made into approve once, keeping its MAC
    const swapped = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    // The MAC's last character carries two unused bits: another spelling of the same bytes.
    const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelt = mac.slice(0, -1) + B64[B64.indexOf(mac.at(-1)!) + 1];
    expect(Buffer.from(respelt, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    const bads = [`${swapped}.${mac}`, `${payload}.${flip(mac)}`, `${payload}.${respelt}`];
    for (const bad of [...bads, 'x', `${payload}.`, `${payload}.${mac}x`]) {
      for (const method of ['GET', 'POST']) {
        const res = await follow(`${base}/decide/${bad}`, method);
        expect(res.status).toBe(403);
        expect(res.json.error.code).toBe('E_LINK_INVALID');
      }
    }
    const page = await follow(`${base}/decide/${swapped}.${mac}`, 'POST', true);
    expect(page.status).toBe(403);
    expect(page.text).toContain('not valid');
    expect(lineCount(g.journalPath)).toBe(before);
    expect(await state(api)).toBe('paused');
    // The links need no admin token; the rest of the admin API still does.
    expect((await api.get('/api/sessions', { token: null })).status).toBe(401);
    // The generated key is private to the gateway's user.
    const keyFile = join(g.journalPath, '..', 'link-key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    await api.post('/api/sessions/agent-1/deny');
    await held;
  });

  it('a link lasts notify.linkTtl after its pause began: then 410, nothing done', async () => {
    const { g, api, held, links } = await paused('30s', undefined, { linkTtl: '1s' });
    const expired = async () => (await follow(links.deny, 'GET')).status === 410;
    await waitFor(expired, 10_000);
    const before = lineCount(g.journalPath);
    for (const url of [links.approveOnce, links.approvePattern, links.approveReset, links.deny]) {
      const res = await follow(url, 'POST');
      expect(res.status).toBe(410);
      expect(res.json.error.code).toBe('E_LINK_EXPIRED');
      expect((await follow(url, 'GET', true)).text).toContain('notify.linkTtl');
    }
    expect(lineCount(g.journalPath)).toBe(before);
    expect(await state(api)).toBe('paused');
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
  });
});
