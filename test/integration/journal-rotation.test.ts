import { appendFileSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { journalFiles, listRotated } from '../../src/journal/files.js';
import type { EventRecord } from '../../src/journal/records.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import { JournalWriter } from '../../src/journal/writer.js';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, viaProxy } from '../helpers/admin.js';
import { exportHar, runCli, runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { readAllRecords, startTestGateway } from '../helpers/gateway.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { fixedSnapshot } from '../helpers/snapshot.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Live: a gateway whose journal rotates every 4 KiB. Requests, a REVIEW, an
 * approval and a block spread over several files; a restart reads only the live file (its
 * snapshot and what follows) and shows the same sessions; the admin API's event pages, replay,
 * HAR export and verify read across the rotated files.
 */
const allowed = await startUpstream();
const other = await startUpstream();

const records = readAllRecords;
const lines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
/** A file's records: its lines less a snapshot's part lines (read as one with their head). */
const recordLines = (path: string) => lines(path).filter((l) => !isPart(l));

function stage(dir: string) {
  const path = join(dir, 'journal.jsonl');
  const config = {
    agents: AGENTS,
    policy: { holdTimeout: '20s' },
    network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
    journal: { path, rotate: 4096, keep: 100 },
  };
  const file = join(dir, 'trajgate.yaml');
  writeFileSync(file, stringify({ version: 1, workspace: dir, ...config }));
  return { path, file, start: () => startTestGateway(config, { dir }) };
}

/** Every event of the session through the API's pages (`limit` a page), newest first. */
async function allEvents(api: AdminClient, session: string, limit = 7): Promise<number[]> {
  const seqs: number[] = [];
  let before = '';
  for (let page = 0; page < 100; page++) {
    const r = await api.get(`/api/sessions/${session}/events?limit=${limit}${before}`);
    expect(r.status).toBe(200);
    seqs.push(...(r.json.events as EventRecord[]).map((e) => e.seq));
    if (r.json.next === null) return seqs;
    before = `&before=${r.json.next}`;
  }
  throw new Error('more than 100 pages');
}

/** A session as the API shows it, less what moves with the clock. */
async function view(api: AdminClient, session: string) {
  const { json } = await api.get(`/api/sessions/${session}`);
  const { heldRequests: _h, lastActivity: _l, ...rest } = json as Record<string, unknown>;
  return rest;
}

describe('a rotating journal, live', () => {
  it('rotates; a restart from the snapshot shows the same; pages, replay, HAR and verify span the files', async () => {
    const dir = tempDir();
    const s = stage(dir);
    let g: TestGateway = await s.start();
    let api = adminClient(g.gw.admin.port, ADMIN);
    for (let i = 0; i < 30; i++) {
      expect((await viaProxy(g.proxyUrl, `${allowed.url}/r${i}`, auth(0))).status).toBe(200);
    }
    expect((await viaProxy(g.proxyUrl, `${other.url}/x`, auth(1))).status).toBe(403);
    expect((await api.post('/api/sessions/agent-2/denies', { pattern: 'evil.test' })).status).toBe(
      201,
    );
    const approved = await api.post('/api/sessions/agent-2/approve', {
      pattern: `127.0.0.1:${other.port}`,
      ttl: '1h',
    });
    expect(approved.status).toBe(201);
    for (let i = 0; i < 10; i++) {
      expect((await viaProxy(g.proxyUrl, `${other.url}/y${i}`, auth(1))).status).toBe(200);
    }
    const outcomes = () => records(s.path).filter((r) => r.type === 'outcome').length;
    await waitFor(() => outcomes() === 41);
    expect(listRotated(s.path).length).toBeGreaterThanOrEqual(3);

    const ofAgent1 = records(s.path)
      .filter((r): r is EventRecord => r.type === 'event' && r.session === 'agent-1')
      .map((r) => r.seq)
      .reverse();
    expect(ofAgent1).toHaveLength(30);
    expect(await allEvents(api, 'agent-1')).toEqual(ofAgent1);
    const before = [await view(api, 'agent-1'), await view(api, 'agent-2')];
    const rules = (await api.get('/api/approvals')).json;
    await g.stop();

    // The restart reads the live file alone: its snapshot, then the lines after it.
    g = await s.start();
    api = adminClient(g.gw.admin.port, ADMIN);
    expect(g.gw.restored).toBe(recordLines(s.path).length);
    expect(JSON.parse(recordLines(s.path)[0] as string)).toMatchObject({ type: 'snapshot' });
    expect([await view(api, 'agent-1'), await view(api, 'agent-2')]).toEqual(before);
    expect((await api.get('/api/approvals')).json).toEqual(rules);
    // Older pages come from the rotated files.
    expect(await allEvents(api, 'agent-1')).toEqual(ofAgent1);
    expect(await allEvents(api, 'agent-1', 1000)).toEqual(ofAgent1);
    // The approval restored from the snapshot still lets agent-2 through; the block still holds.
    expect((await viaProxy(g.proxyUrl, `${other.url}/z`, auth(1))).status).toBe(200);
    await waitFor(() => outcomes() === 42);
    await g.stop();

    const verified = await runCliAsync(['verify', '--config', s.file]);
    expect(verified.stderr).toBe('');
    const files = journalFiles(s.path).length;
    const total = journalFiles(s.path).reduce((n, f) => n + recordLines(f).length, 0);
    expect(verified.stdout).toBe(`ok: ${total} records in ${files} files, chain intact\n`);

    // replay judges every event of every file again, oldest first.
    const replayed = await runCliAsync(['replay', s.path, '--config', s.file]);
    expect(replayed.stderr).toBe('');
    const judged = records(s.path).filter((r) => r.type === 'event' && r.held !== true);
    expect(replayed.stdout.trim().split('\n')).toHaveLength(judged.length);

    // HAR: all 30 exchanges of agent-1, from every file.
    const har = await exportHar(s.path, 'agent-1');
    expect(har.status).toBe(0);
    const entries = JSON.parse(readFileSync(har.out, 'utf8')).log.entries as unknown[];
    expect(entries).toHaveLength(30);
  });
});

/**
 * A journal of `n` deny records rotating every 4 KiB (keep 100), written by the writer, each
 * snapshot built before the next record.
 */
async function rotatingJournal(n: number): Promise<{ path: string; config: string }> {
  const dir = tempDir();
  const path = join(dir, 'journal.jsonl');
  const w = new JournalWriter(path, {
    lastSeq: 0,
    fsyncMs: 60_000,
    rotate: { bytes: 4096, keep: 100, keepFor: 0, snapshot: fixedSnapshot({ note: 'test' }) },
  });
  for (let i = 0; i < n; i++) {
    w.append({ type: 'deny', session: `agent-${i}`, by: 't', released: i });
    await w.building;
  }
  w.close();
  const config = join(dir, 'trajgate.yaml');
  writeFileSync(config, stringify({ version: 1, workspace: dir, journal: { path, rotate: 4096 } }));
  return { path, config };
}

describe('trajgate verify across rotated files', () => {
  it('an intact rotated journal → exit 0, the records and files', async () => {
    const { path, config } = await rotatingJournal(200);
    const files = journalFiles(path);
    expect(files.length).toBeGreaterThan(4);
    const r = runCli(['verify', '--config', config]);
    const total = files.reduce((n, f) => n + lines(f).length, 0);
    expect([r.status, r.stderr, r.stdout]).toEqual([
      0,
      '',
      `ok: ${total} records in ${files.length} files, chain intact\n`,
    ]);
    // Files given are checked in the order given: the live file alone starts at its snapshot.
    expect(runCli(['verify', path]).status).toBe(0);
    expect(runCli(['verify', ...files.slice(2)]).status).toBe(0);
  });

  it('a tampered middle line → exit 1 naming the file and the line after it', async () => {
    const { path, config } = await rotatingJournal(200);
    const middle = listRotated(path)[2]!.path;
    const ls = lines(middle);
    ls[3] = (ls[3] as string).replace(/"released":\d+/, '"released":999');
    writeFileSync(middle, ls.join('\n') + '\n');
    const r = runCli(['verify', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `trajgate: ${middle}:5: prev does not match line 4 (edited, removed or inserted)\n`,
    );
  });

  it('a deleted middle file → exit 1 naming the file where the chain does not follow', async () => {
    const { path, config } = await rotatingJournal(200);
    const rotated = listRotated(path);
    unlinkSync(rotated[2]!.path);
    const r = runCli(['verify', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `trajgate: ${rotated[3]!.path}:1: the chain does not follow from journal.000002.jsonl: rotated file(s) 3..3 between them are missing (deleted)\n`,
    );
    // Given as files, the chain itself says so.
    const given = runCli(['verify', ...journalFiles(path)]);
    expect(given.status).toBe(1);
    expect(given.stderr).toContain(
      `${rotated[3]!.path}:1: prev does not match the last line of ${rotated[1]!.path}`,
    );
  });

  it('a torn last line → exit 0 with a warning naming it (a crash leaves one); torn mid-journal → exit 1', async () => {
    const { path, config } = await rotatingJournal(200);
    const cut = '{"seq":999,"ts":"2026-';
    appendFileSync(path, cut);
    const n = lines(path).length + 1;
    const r = runCli(['verify', '--config', config]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(
      `trajgate: warning: ${path}:${n}: torn last line (${cut.length} bytes cut short by a crash); the chain before it is intact, and trajgate start moves it aside\n`,
    );
    expect(r.stdout).toMatch(/^ok: \d+ records in \d+ files, chain intact\n$/);
    // A rotated file is never torn: one cut short there is a broken chain.
    const middle = listRotated(path)[1]!.path;
    appendFileSync(middle, '{"seq":');
    const torn = runCli(['verify', '--config', config]);
    expect(torn.status).toBe(1);
    expect(torn.stderr).toBe(`trajgate: ${middle}:${lines(middle).length + 1}: torn (cut short)\n`);
  });
});
