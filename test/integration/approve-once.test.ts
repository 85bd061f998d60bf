import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, lineCount, viaProxy } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest, readRecords } from '../helpers/gateway.js';
import { runCliAsync } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { openRaw, startTcpServer } from '../helpers/raw.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { startUpstream } from '../helpers/upstream.js';
import { startWebhook } from '../helpers/webhook.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 25 § 4: "approve once" approves what the person was shown. A session pauses on a GET;
 * then a POST with a body to another host and a blind CONNECT are held behind it. Approving the
 * GET once (by decision link or API) forwards the GET alone: the POST and the CONNECT are judged
 * again, pause the session again and stay held; neither upstream sees a byte of them.
 */
const shown = await startUpstream();
const other = await startUpstream();
const tcp = await startTcpServer((socket) => socket.resume());
const TUNNEL = `127.0.0.1:${tcp.port}`;
const SESSION = AGENTS[0]!.id;
const proxyAuth = `Basic ${Buffer.from(`${SESSION}:${AGENTS[0]!.token}`).toString('base64')}`;

const BASE = {
  agents: [AGENTS[0]],
  policy: { holdTimeout: '30s' },
  network: { allowPrivate: ['127.0.0.1/32'], ports: [80, 443, tcp.port] },
  admin: { token: ADMIN },
};
const { start, stopped } = gatewayPerTest(BASE);
const cwd = tempDir();

const ofType = <T extends JournalRecord['type']>(g: TestGateway, type: T) =>
  g.records().filter((r) => r.type === type) as Extract<JournalRecord, { type: T }>[];

const heldNow = async (api: AdminClient) =>
  (await api.get(`/api/sessions/${SESSION}`)).json.heldRequests as {
    rid: number;
    what: string;
    bytes: number | null;
  }[];

/** Paused on GET shown/x, then POST other/upload (a body) and CONNECT TUNNEL held too. */
async function threeHeld(extra: Record<string, unknown> = {}, dir?: string) {
  // What each upstream received, counted from here: one test's requests only.
  shown.seen.length = 0;
  other.seen.length = 0;
  tcp.connections = 0;
  const g = await start(extra, dir === undefined ? {} : { dir });
  const api = adminClient(g.gw.admin.port, ADMIN);
  expect((await viaProxy(g.proxyUrl, `${shown.url}/first`, auth(0))).status).toBe(403);
  const get = viaProxy(g.proxyUrl, `${shown.url}/x`, auth(0));
  await waitFor(async () => (await heldNow(api)).length === 1);
  const post = curl([...auth(0), '-x', g.proxyUrl, '-d', 'secret=42', `${other.url}/upload`]);
  await waitFor(async () => (await heldNow(api)).length === 2);
  const connect = openRaw(
    g.gw.proxy.port,
    `CONNECT ${TUNNEL} HTTP/1.1\r\nHost: ${TUNNEL}\r\nProxy-Authorization: ${proxyAuth}\r\n\r\n`,
    20_000,
  );
  await waitFor(async () => (await heldNow(api)).length === 3);
  const held = await heldNow(api);
  const [pause] = ofType(g, 'pause');
  const rid = pause!.trigger.seq;
  return { g, api, get, post, connect, held, rid, pause: pause! };
}

/** After an approve-once of the GET alone: only it went out; the others are held again. */
async function onlyTheGetWent(s: Awaited<ReturnType<typeof threeHeld>>) {
  const { g, api, get, post, connect, rid } = s;
  expect((await get).status).toBe(200);
  expect(shown.seen.filter((r) => r.url === '/x')).toHaveLength(1);
  // Judged again: an unapproved crossing pauses the session again, and both stay held.
  await waitFor(() => ofType(g, 'pause').length === 2, 5_000, 'a second pause');
  await waitFor(async () => (await heldNow(api)).length === 2);
  const still = (await heldNow(api)).map((h) => h.what).sort();
  expect(still).toEqual([`CONNECT ${TUNNEL}`, `POST ${other.url}/upload`]);
  expect(other.seen.filter((r) => r.url === '/upload')).toEqual([]);
  expect(tcp.connections).toBe(0);
  // The journal says which request was approved once, and only its event is approved.
  const resumes = ofType(g, 'resume');
  expect(resumes).toHaveLength(1);
  expect(resumes[0]!.once).toEqual([rid]);
  const approved = ofType(g, 'event').filter((e) => e.approved);
  expect(approved.map((e) => [e.rid, e.target, e.verdict])).toEqual([
    [rid, `${shown.url}/x`, 'ALLOW'],
  ]);
  // The session is paused again: the decision for the rest is the operator's.
  expect((await api.post(`/api/sessions/${SESSION}/deny`)).status).toBe(200);
  expect((await post).status).toBe(403);
  const tunnel = await connect;
  expect(tunnel.status).toBe(403);
  tunnel.socket.destroy();
  expect(tcp.connections).toBe(0);
  expect(other.seen.filter((r) => r.url === '/upload')).toEqual([]);
}

describe('approve once covers the requests it names', () => {
  it('a decision link names the request its notification showed, and approves that one only', async () => {
    const hook = await startWebhook();
    const s = await threeHeld({ notify: { webhook: hook.url } });
    // The pause record's held entry carries the rid the link names.
    expect(s.pause.held).toEqual([expect.objectContaining({ rid: s.rid, bytes: null })]);
    await waitFor(() => hook.deliveries.length === 1);
    const link = (hook.deliveries[0]!.body.links as { approveOnce: string }).approveOnce;

    // The confirmation page lists all three, and marks the one approve once forwards.
    const page = await request(link, { headers: { accept: 'text/html' } });
    const html = await page.body.text();
    expect(page.statusCode).toBe(200);
    expect(html).toContain(`✔ approved once: #${s.rid} GET ${shown.url}/x`);
    const postRid = s.held.find((h) => h.what.startsWith('POST'))!.rid;
    expect(html).toContain(`stays held: #${postRid} POST ${other.url}/upload (9 bytes)`);
    expect(html).toContain(`CONNECT ${TUNNEL}`);
    expect(html).toContain('The other 2 held requests stay held and are judged again');
    const view = (await (
      await request(link, { headers: { accept: 'application/json' } })
    ).body.json()) as {
      once: number[];
      heldRequests: { rid: number; covered: boolean }[];
    };
    expect(view.once).toEqual([s.rid]);
    expect(view.heldRequests.filter((h) => h.covered).map((h) => h.rid)).toEqual([s.rid]);

    const done = await request(link, {
      method: 'POST',
      body: '',
      headers: { accept: 'application/json' },
    });
    const decided = (await done.body.json()) as {
      once: { rid: number }[];
      judged: { rid: number }[];
    };
    expect(done.statusCode).toBe(200);
    expect(decided.once.map((h) => h.rid)).toEqual([s.rid]);
    expect(decided.judged).toHaveLength(2);
    await onlyTheGetWent(s);
  });

  it('the API approves once the rids it is given; a rid not held is refused, nothing done', async () => {
    const s = await threeHeld();
    const path = `/api/sessions/${SESSION}/resume`;
    const before = lineCount(s.g.journalPath);
    for (const bad of [true, [], [0], [1.5], ['1'], 'x']) {
      const r = await s.api.post(path, { once: bad });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('E_BAD_FIELD');
    }
    const missing = await s.api.post(path, { once: [s.rid, 99999] });
    expect(missing.status).toBe(409);
    expect(missing.json.error.code).toBe('E_NOT_HELD');
    expect(missing.json.error.message).toContain('#99999');
    expect(lineCount(s.g.journalPath)).toBe(before);
    expect(await heldNow(s.api)).toHaveLength(3);

    const r = await s.api.post(path, { once: [s.rid] });
    expect(r.status).toBe(200);
    expect(r.json.once).toEqual([{ rid: s.rid, what: `GET ${shown.url}/x`, bytes: null }]);
    expect(r.json.judged.map((h: { what: string }) => h.what).sort()).toEqual([
      `CONNECT ${TUNNEL}`,
      `POST ${other.url}/upload`,
    ]);
    await onlyTheGetWent(s);
  });

  it('the CLI approves once the rids it names, and without one lists the held requests', async () => {
    const s = await threeHeld();
    const op = (args: string[]) =>
      runCliAsync([...args, '--admin', `http://127.0.0.1:${s.g.gw.admin.port}`], {
        cwd,
        env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
      });
    const ambiguous = await op(['approve', SESSION, '--once']);
    expect(ambiguous.status).toBe(2);
    expect(ambiguous.stdout).toBe('');
    for (const h of s.held) expect(ambiguous.stderr).toContain(`#${h.rid} ${h.what}`);
    expect(ambiguous.stderr).toContain(`POST ${other.url}/upload (9 bytes)`);
    expect((await op(['approve', SESSION, '--once', 'x'])).status).toBe(2);
    const notHeld = await op(['approve', SESSION, '--once', '99999']);
    expect(notHeld.status).not.toBe(0);
    expect(notHeld.stderr).toContain('409 request #99999 is not held');
    expect(await heldNow(s.api)).toHaveLength(3);
    expect(ofType(s.g, 'resume')).toEqual([]);

    const done = await op(['approve', SESSION, '--once', String(s.rid)]);
    expect(done.stderr).toBe('');
    expect(done.status).toBe(0);
    expect(done.stdout).toContain(`forwarded as approved:\n  #${s.rid} GET ${shown.url}/x\n`);
    expect(done.stdout).toContain(`POST ${other.url}/upload (9 bytes)`);
    expect(done.stdout).toContain(`CONNECT ${TUNNEL}`);
    await onlyTheGetWent(s);
  });

  it('with one request held, approve --once takes it; --json prints the answer', async () => {
    const g = await start();
    const api = adminClient(g.gw.admin.port, ADMIN);
    expect((await viaProxy(g.proxyUrl, `${shown.url}/first`, auth(0))).status).toBe(403);
    const get = viaProxy(g.proxyUrl, `${shown.url}/one`, auth(0));
    await waitFor(async () => (await heldNow(api)).length === 1);
    const { rid } = (await heldNow(api))[0]!;
    const r = await runCliAsync(
      ['approve', SESSION, '--once', '--json', '--admin', `http://127.0.0.1:${g.gw.admin.port}`],
      { cwd, env: { TRAJGATE_ADMIN_TOKEN: ADMIN } },
    );
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({
      resumed: true,
      released: 1,
      once: [{ rid }],
      judged: [],
    });
    expect((await get).status).toBe(200);
  });

  it('a restart and `trajgate replay` of the journal agree with what happened live', async () => {
    const dir = tempDir();
    const s = await threeHeld({}, dir);
    expect((await s.api.post(`/api/sessions/${SESSION}/resume`, { once: [s.rid] })).status).toBe(
      200,
    );
    await onlyTheGetWent(s);
    const live = (await s.api.get(`/api/sessions/${SESSION}`)).json;
    await s.g.stop();
    stopped();
    const records = readRecords(s.g.journalPath);
    const judged = records
      .filter((r): r is EventRecord & { type: 'event' } => r.type === 'event' && r.held !== true)
      .map((e) => [e.target, e.verdict, e.approved]);
    const file = join(dir, 'trajgate.yaml');
    writeFileSync(file, stringify({ version: 1, workspace: dir, ...BASE }));
    const replayed = await runCliAsync(['replay', s.g.journalPath, '--config', file, '--json'], {
      cwd,
    });
    expect(replayed.stderr).toBe('');
    const verdicts = replayed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { target: string; verdict: string; approved: boolean })
      .map((v) => [v.target, v.verdict, v.approved]);
    expect(verdicts).toEqual(judged);

    const again = await start({}, { dir });
    const view = (await adminClient(again.gw.admin.port, ADMIN).get(`/api/sessions/${SESSION}`))
      .json;
    expect([view.state, view.counts, view.pausedBy]).toEqual([
      live.state,
      live.counts,
      live.pausedBy,
    ]);
  });

  it('a blind CONNECT is admitted by approve once only when it is itself named', async () => {
    const s = await threeHeld();
    const connectRid = s.held.find((h) => h.what.startsWith('CONNECT'))!.rid;
    const r = await s.api.post(`/api/sessions/${SESSION}/resume`, { once: [connectRid] });
    expect(r.json.once.map((h: { rid: number }) => h.rid)).toEqual([connectRid]);
    const tunnel = await s.connect;
    expect(tunnel.status).toBe(200);
    await waitFor(() => tcp.connections === 1);
    tunnel.socket.destroy();
    // The GET and the POST were judged again: the first crossing after resume pauses again.
    await waitFor(async () => (await heldNow(s.api)).length === 2);
    expect(other.seen.filter((r) => r.url === '/upload')).toEqual([]);
    expect(shown.seen.filter((r) => r.url === '/x')).toEqual([]);
    await s.api.post(`/api/sessions/${SESSION}/deny`);
    expect((await s.get).status).toBe(403);
    expect((await s.post).status).toBe(403);
  });

  it('a rid no longer held releases nothing extra: the rest are judged again', async () => {
    const s = await threeHeld();
    const r = s.g.gw.sessions.resumeReport(SESSION, { once: [99999] });
    expect(r.once).toEqual([]);
    expect(r.judged).toHaveLength(3);
    await waitFor(async () => (await heldNow(s.api)).length === 3);
    expect(ofType(s.g, 'event').filter((e) => e.approved)).toEqual([]);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
    await s.api.post(`/api/sessions/${SESSION}/deny`);
    for (const p of [s.get, s.post]) expect((await p).status).toBe(403);
    expect((await s.connect).status).toBe(403);
    expect(tcp.connections).toBe(0);
  });

  it("another gateway's rids approve nothing here; an older journal's once: true approves all", async () => {
    const s = await threeHeld();
    const { sessions, guard } = s.g.gw;
    guard.resume(SESSION, false, false);
    const foreign = sessions.resumedElsewhere({ session: SESSION, once: [s.rid], onceAt: 'gw-b' });
    expect(foreign.once).toEqual([]);
    expect(foreign.judged).toHaveLength(3);
    await waitFor(async () => (await heldNow(s.api)).length === 3);
    expect(ofType(s.g, 'event').filter((e) => e.approved)).toEqual([]);
    guard.resume(SESSION, true, false);
    const all = sessions.resumedElsewhere({ session: SESSION, once: true });
    expect(all.once).toHaveLength(3);
    expect((await s.get).status).toBe(200);
    expect((await s.post).status).toBe(200);
    const tunnel = await s.connect;
    expect(tunnel.status).toBe(200);
    tunnel.socket.destroy();
    await waitFor(() => tcp.connections === 1);
  });
});
