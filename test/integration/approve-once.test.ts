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
 * "Approve once" approves what the person was shown, and nothing else. A session
 * pauses on a GET; then a POST with a body to another host and a blind CONNECT are held behind
 * it. Approving the GET once (by decision link, API or CLI) forwards the GET alone: the session
 * stays paused and the POST and the CONNECT stay held (not judged again, their hold time running
 * on); neither upstream sees a byte of them until a deny answers them 403 or a resume judges
 * them again.
 */
const shown = await startUpstream();
const other = await startUpstream();
let tunnelled = 0;
const tcp = await startTcpServer((socket) => socket.on('data', (d) => (tunnelled += d.length)));
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

interface HeldNow {
  rid: number;
  what: string;
  bytes: number | null;
  deadline: string;
}

const heldNow = async (api: AdminClient) =>
  (await api.get(`/api/sessions/${SESSION}`)).json.heldRequests as HeldNow[];

/** A held request as a resume reports it. */
const brief = ({ rid, what, bytes }: HeldNow) => ({ rid, what, bytes });

/** Paused on GET shown/x, then POST other/upload (a body) and CONNECT TUNNEL held too. */
async function threeHeld(extra: Record<string, unknown> = {}, dir?: string) {
  // What each upstream received, counted from here: one test's requests only.
  shown.seen.length = 0;
  other.seen.length = 0;
  tcp.connections = 0;
  tunnelled = 0;
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
  const ridOf = (method: string) => held.find((h) => h.what.startsWith(method))!.rid;
  return {
    g,
    api,
    get,
    post,
    connect,
    held,
    rid,
    postRid: ridOf('POST'),
    connectRid: ridOf('CONNECT'),
    pause: pause!,
  };
}
type Three = Awaited<ReturnType<typeof threeHeld>>;

/**
 * After an approve-once naming `named` (rids) let `approved` go: the session is still paused by its one
 * pause, the others are held as they were (same deadlines) and nothing was journaled for them
 * since; only the approved requests' events say approved.
 */
async function stillPausedHolding(
  s: Three,
  approved: readonly number[],
  named: readonly number[] = approved,
) {
  const { g, api } = s;
  const view = (await api.get(`/api/sessions/${SESSION}`)).json;
  expect(view.state).toBe('paused');
  expect(ofType(g, 'pause')).toHaveLength(1);
  const rest = s.held.filter((h) => !approved.includes(h.rid));
  expect(
    (view.heldRequests as HeldNow[]).map(({ rid, what, deadline }) => ({ rid, what, deadline })),
  ).toEqual(rest.map(({ rid, what, deadline }) => ({ rid, what, deadline })));
  const resumes = ofType(g, 'resume');
  expect(resumes).toHaveLength(1);
  expect(resumes[0]!.once).toEqual(named);
  const since = ofType(g, 'event').filter((e) => e.seq > resumes[0]!.seq);
  expect(since.map((e) => [e.rid, e.approved])).toEqual(approved.map((rid) => [rid, true]));
  expect(
    ofType(g, 'event')
      .filter((e) => e.approved)
      .map((e) => e.rid),
  ).toEqual(approved);
}

/** After an approve-once of the GET alone: only it went out; the others are still held. */
async function onlyTheGetWent(s: Three) {
  const { g, get, rid } = s;
  expect((await get).status).toBe(200);
  expect(shown.seen.filter((r) => r.url === '/x')).toHaveLength(1);
  await stillPausedHolding(s, [rid]);
  const [approved] = ofType(g, 'event').filter((e) => e.approved);
  expect([approved!.target, approved!.verdict]).toEqual([`${shown.url}/x`, 'ALLOW']);
  expect(other.seen.filter((r) => r.url === '/upload')).toEqual([]);
  expect(tcp.connections).toBe(0);
}

/** `deny` (the API's by default) answers the POST and the CONNECT 403; neither ever went out. */
async function theRestRefused(s: Three, deny?: () => Promise<void>) {
  if (deny === undefined)
    expect((await s.api.post(`/api/sessions/${SESSION}/deny`)).status).toBe(200);
  else await deny();
  expect((await s.post).status).toBe(403);
  const tunnel = await s.connect;
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
    const links = hook.deliveries[0]!.body.links as { approveOnce: string; deny: string };

    // The confirmation page lists all three, and marks the one approve once forwards.
    const page = await request(links.approveOnce, { headers: { accept: 'text/html' } });
    const html = await page.body.text();
    expect(page.statusCode).toBe(200);
    expect(html).toContain(`✔ approved once: #${s.rid} GET ${shown.url}/x`);
    expect(html).toContain(`stays held: #${s.postRid} POST ${other.url}/upload (9 bytes)`);
    expect(html).toContain(`stays held: #${s.connectRid} CONNECT ${TUNNEL}`);
    expect(html).toContain(
      'The other 2 held requests stay held and the session stays paused: they are judged again when the session is resumed.',
    );
    const view = (await (
      await request(links.approveOnce, { headers: { accept: 'application/json' } })
    ).body.json()) as {
      once: number[];
      heldRequests: { rid: number; covered: boolean }[];
    };
    expect(view.once).toEqual([s.rid]);
    expect(view.heldRequests.filter((h) => h.covered).map((h) => h.rid)).toEqual([s.rid]);

    const done = await request(links.approveOnce, {
      method: 'POST',
      body: '',
      headers: { accept: 'text/html' },
    });
    expect(done.statusCode).toBe(200);
    expect(await done.body.text()).toContain(
      `Approved once, forwarded: #${s.rid} GET ${shown.url}/x; still held, the session paused: #${s.postRid} POST ${other.url}/upload (9 bytes), #${s.connectRid} CONNECT ${TUNNEL}.`,
    );
    await onlyTheGetWent(s);
    // Used: what it named went, so a second confirm does nothing and journals nothing.
    const lines = s.g.records().length;
    const again = await request(links.approveOnce, {
      method: 'POST',
      body: '',
      headers: { accept: 'application/json' },
    });
    expect(again.statusCode).toBe(410);
    expect(((await again.body.json()) as { error: { code: string } }).error.code).toBe(
      'E_LINK_USED',
    );
    expect(s.g.records()).toHaveLength(lines);
    // The pause is not decided yet: its deny link answers the rest.
    await theRestRefused(s, async () => {
      const denied = await request(links.deny, {
        method: 'POST',
        body: '',
        headers: { accept: 'application/json' },
      });
      expect(denied.statusCode).toBe(200);
      expect(await denied.body.json()).toMatchObject({ decided: 'deny', released: 2 });
    });
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
    const [, post, connect] = s.held.map(brief);
    expect(post).toEqual({ rid: s.postRid, what: `POST ${other.url}/upload`, bytes: 9 });
    expect(r.json).toEqual({
      resumed: true,
      released: 1,
      once: [{ rid: s.rid, what: `GET ${shown.url}/x`, bytes: null }],
      judged: [],
      held: [post, connect],
    });
    await onlyTheGetWent(s);

    // A plain resume then judges them again: the POST crosses the boundary unapproved, which
    // pauses the session again, and both are held once more: the answer says so.
    expect((await s.api.post(path)).json).toMatchObject({
      resumed: true,
      released: 2,
      pausedAgain: { boundary: 'network', trigger: { kind: 'network', method: 'POST' } },
    });
    expect(ofType(s.g, 'pause')).toHaveLength(2);
    await waitFor(async () => (await heldNow(s.api)).length === 2);
    const rejudged = ofType(s.g, 'event').filter(
      (e) => e.rid === s.postRid && e.held !== true && e.seq > ofType(s.g, 'resume')[1]!.seq,
    );
    expect(rejudged.map((e) => [e.verdict, e.approved])).toEqual([['PAUSE', false]]);
    expect(shown.seen.filter((x) => x.url === '/x')).toHaveLength(1);
    await theRestRefused(s);
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
    expect(done.stdout).toBe(
      [
        `approved once in ${SESSION}; the session stays paused`,
        'forwarded as approved:',
        `  #${s.rid} GET ${shown.url}/x`,
        'still held (trajgate resume or deny decides them):',
        `  #${s.postRid} POST ${other.url}/upload (9 bytes)`,
        `  #${s.connectRid} CONNECT ${TUNNEL}`,
        '',
      ].join('\n'),
    );
    await onlyTheGetWent(s);
    await theRestRefused(s, async () => {
      expect((await op(['deny', SESSION])).status).toBe(0);
    });
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
      held: [],
    });
    expect((await get).status).toBe(200);
    expect((await api.get(`/api/sessions/${SESSION}`)).json.state).toBe('paused');
  });

  it('after a restart the pause an approve-once left undecided keeps its record and its links', async () => {
    const dir = tempDir();
    const hook = await startWebhook();
    const s = await threeHeld({ notify: { webhook: hook.url } }, dir);
    await waitFor(() => hook.deliveries.length === 1);
    const links = hook.deliveries[0]!.body.links as { deny: string };
    expect((await s.api.post(`/api/sessions/${SESSION}/resume`, { once: [s.rid] })).status).toBe(
      200,
    );
    await onlyTheGetWent(s);
    await s.g.stop();
    stopped();
    await Promise.allSettled([s.post, s.connect]);
    const again = await start({ notify: { webhook: hook.url } }, { dir });
    const view = (await adminClient(again.gw.admin.port, ADMIN).get(`/api/sessions/${SESSION}`))
      .json;
    expect(view.state).toBe('paused');
    expect(view.pause?.trigger.seq).toBe(s.rid);
    // The same link, on the restarted gateway's admin port.
    const link = new URL(new URL(links.deny).pathname, `http://127.0.0.1:${again.gw.admin.port}`);
    const denied = await request(link, {
      method: 'POST',
      body: '',
      headers: { accept: 'application/json' },
    });
    expect(denied.statusCode).toBe(200);
  });

  it('a restart and `trajgate replay` of the journal agree with what happened live', async () => {
    const dir = tempDir();
    const s = await threeHeld({}, dir);
    expect((await s.api.post(`/api/sessions/${SESSION}/resume`, { once: [s.rid] })).status).toBe(
      200,
    );
    await onlyTheGetWent(s);
    await theRestRefused(s);
    const live = (await s.api.get(`/api/sessions/${SESSION}`)).json;
    expect(live.state).toBe('paused');
    await s.g.stop();
    stopped();
    const records = readRecords(s.g.journalPath);
    const judged = records
      .filter((r): r is EventRecord & { type: 'event' } => r.type === 'event' && r.held !== true)
      .map((e) => [e.target, e.verdict, e.approved]);
    expect(judged).toEqual([
      [`${shown.url}/first`, 'REVIEW', false],
      [`${shown.url}/x`, 'PAUSE', false],
      [`${shown.url}/x`, 'ALLOW', true],
    ]);
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

    // The approve-once's resume record does not unpause: the session is paused after a restart.
    const again = await start({}, { dir });
    const view = (await adminClient(again.gw.admin.port, ADMIN).get(`/api/sessions/${SESSION}`))
      .json;
    expect([view.state, view.counts, view.pausedBy, view.pausedAt]).toEqual([
      'paused',
      live.counts,
      live.pausedBy,
      live.pausedAt,
    ]);
  });

  it('a blind CONNECT is admitted by approve once only when it is itself named', async () => {
    const s = await threeHeld();
    const r = await s.api.post(`/api/sessions/${SESSION}/resume`, { once: [s.connectRid] });
    expect(r.json.once).toEqual([{ rid: s.connectRid, what: `CONNECT ${TUNNEL}`, bytes: null }]);
    expect(r.json.held.map((h: { rid: number }) => h.rid)).toEqual([s.rid, s.postRid]);
    // It opens though the session stays paused, and its bytes flow: approved, it is not frozen.
    const tunnel = await s.connect;
    expect(tunnel.status).toBe(200);
    await waitFor(() => tcp.connections === 1);
    tunnel.socket.write('ping');
    await waitFor(() => tunnelled === 4, 20_000, 'the tunnel relayed');
    tunnel.socket.destroy();
    await stillPausedHolding(s, [s.connectRid]);
    expect(other.seen.filter((x) => x.url === '/upload')).toEqual([]);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
    await s.api.post(`/api/sessions/${SESSION}/deny`);
    expect((await s.get).status).toBe(403);
    expect((await s.post).status).toBe(403);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
    expect(tcp.connections).toBe(1);
  });

  it('a rid no longer held releases nothing: every held request stays held', async () => {
    const s = await threeHeld();
    const r = s.g.gw.sessions.resumeReport(SESSION, { once: [99999] });
    expect(r).toEqual({ released: 0, once: [], judged: [], held: s.held.map(brief) });
    await stillPausedHolding(s, [], [99999]);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
    await theRestRefused(s);
    expect((await s.get).status).toBe(403);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
  });

  it("another gateway's rids approve nothing here; an older journal's once: true approves all", async () => {
    const s = await threeHeld();
    const { sessions, guard } = s.g.gw;
    const foreign = sessions.resumedElsewhere({ session: SESSION, once: [s.rid], onceAt: 'gw-b' });
    expect(foreign).toEqual({ released: 0, once: [], judged: [], held: s.held.map(brief) });
    expect(guard.session(SESSION)?.pausedAt).toBe(Date.parse(s.pause.pausedAt));
    const view = (await s.api.get(`/api/sessions/${SESSION}`)).json;
    expect([view.state, view.held]).toEqual(['paused', 3]);
    expect(ofType(s.g, 'event').filter((e) => e.approved)).toEqual([]);
    expect(shown.seen.filter((x) => x.url === '/x')).toEqual([]);
    // An older journal's `once: true` resumed (its record unpauses) and forwarded all approved.
    guard.resume(SESSION, false, false);
    const all = sessions.resumedElsewhere({ session: SESSION, once: true });
    expect(all.once).toEqual(s.held.map(brief));
    expect(all.held).toEqual([]);
    expect((await s.get).status).toBe(200);
    expect((await s.post).status).toBe(200);
    const tunnel = await s.connect;
    expect(tunnel.status).toBe(200);
    tunnel.socket.destroy();
    await waitFor(() => tcp.connections === 1);
  });
});
