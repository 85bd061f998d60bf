import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { digestOf, GENESIS } from '../../src/journal/chain.js';
import { readJournal } from '../../src/journal/reader.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { exportHar, runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { DRIFT_AFTER_FAILURE } from '../helpers/rules.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * A journal written before the names were made one (docs/glossary.md) reads as today's: the
 * request id spelt `ref` in outcome, result and flow records, an operator's deny pattern a
 * `block` record. Its lines are never rewritten
 * (the chain is over their bytes), so restart, replay, verify and export read both spellings
 * and rebuild the same state from either.
 */
const up = await startUpstream();
const ws = tempDir();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = ['agent-1', 'agent-2', 'agent-3'];
const config = {
  workspace: ws,
  agents: AGENTS.map((id) => ({ id, token: agentToken(id) })),
  policy: { pause: 'block', sequences: [DRIFT_AFTER_FAILURE] },
  network: { allow: [`127.0.0.1:${up.port}`], allowPrivate: ['127.0.0.1/32'] },
  admin: { token: ADMIN },
};
// No DNS in tests: the names resolve to a public address.
const lookup = async () => ['93.184.216.34'];
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const g of gateways) await g.stop();
});
async function start(dir: string): Promise<TestGateway> {
  const g = await startTestGateway(config, { dir, lookup });
  gateways.push(g);
  return g;
}
const ingest = (g: TestGateway, id: string, path: string, body: unknown) =>
  postAsAgent(`http://127.0.0.1:${g.gw.bridge.port}${path}`, id, body);
const egress = (g: TestGateway, id: string) =>
  ingest(g, id, '/events', { kind: 'network', target: 'https://upload.example.net/x' });

/**
 * What a trajgate before the names were made one wrote for `record`: `ref` for `rid`, type
 * `block` for `deny-pattern`.
 */
function oldSpelling(record: Record<string, unknown>): Record<string, unknown> {
  const requestId = ['outcome', 'result', 'flow', 'tunnel'].includes(record.type as string);
  return Object.fromEntries(
    Object.entries(record).map(([k, v]) => [
      k === 'rid' && requestId ? 'ref' : k,
      k === 'type' && v === 'deny-pattern' ? 'block' : v,
    ]),
  );
}

/** The journal at `from` as an older trajgate would have written it, chained anew, at `to`. */
function writeOld(from: string, to: string): string {
  let prev = GENESIS;
  const lines = readFileSync(from, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((text) => {
      const line = JSON.stringify(oldSpelling({ ...JSON.parse(text), prev }));
      prev = digestOf(line);
      return line;
    });
  writeFileSync(to, lines.join('\n') + '\n');
  return lines.join('\n');
}

function readAll(path: string): JournalRecord[] {
  const records: JournalRecord[] = [];
  readJournal(
    path,
    (r) => records.push(r),
    () => undefined,
    { repair: false },
  );
  return records;
}

/** An API answer or records without `prev`: the two journals' chains differ, nothing else. */
const unchained = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (k, v: unknown) => (k === 'prev' ? undefined : v)));

describe('a journal with the old spellings', () => {
  it('restarts, replays, verifies and exports as the same journal with the new ones', async () => {
    const newDir = tempDir();
    const g = await start(newDir);
    // agent-1: a request through the proxy (its outcome names it); agent-2 and agent-3: a
    // command whose runner reports a failure (its result names it), marking the drift rule.
    const [id1, token1] = ['agent-1', agentToken('agent-1')];
    expect((await viaProxy(g.proxyUrl, `${up.url}/a`, agentAuth(id1, token1))).status).toBe(200);
    for (const id of ['agent-2', 'agent-3']) {
      await ingest(g, id, '/events', { kind: 'command', target: ws, call: `toolu_${id}` });
      const r = await ingest(g, id, '/events/result', {
        kind: 'command',
        target: ws,
        ok: false,
        call: `toolu_${id}`,
      });
      expect(r.json.rid).toEqual(expect.any(Number));
    }
    // agent-2 crosses after the failure: paused live (replay must judge it so again).
    expect((await egress(g, 'agent-2')).json).toMatchObject({ verdict: 'PAUSE' });
    // Deny patterns: one for agent-1, one for every session.
    const api = adminClient(g.gw.admin.port, ADMIN);
    const denied = `GET ${up.url}/denied/`;
    expect((await api.post('/api/sessions/agent-1/denies', { pattern: denied })).status).toBe(201);
    expect((await api.post('/api/denies', { pattern: 'evil.test' })).status).toBe(201);
    await g.stop();
    gateways.splice(gateways.indexOf(g), 1);

    const newJournal = g.journalPath;
    const oldDir = tempDir();
    const oldJournal = join(oldDir, 'journal.jsonl');
    const text = writeOld(newJournal, oldJournal);
    expect(text).toMatch(/"type":"outcome","ref":\d+/);
    expect(text).toMatch(/"type":"result","session":"agent-2","ref":\d+/);
    expect(text).not.toMatch(/"type":"(outcome|result)","rid"/);
    expect(text.match(/"type":"block"/g)).toHaveLength(2);
    expect(text).not.toContain('deny-pattern');

    // Read back: the same records but for the chain.
    expect(unchained(readAll(oldJournal))).toEqual(unchained(readAll(newJournal)));

    // verify: the old lines are a whole chain.
    const verified = await runCliAsync(['verify', oldJournal]);
    expect(verified.stdout).toMatch(/^ok: \d+ records, chain intact/);
    expect(verified.status).toBe(0);

    // replay: the same verdicts; agent-2's crossing pauses only if its result was read.
    const replay = async (journal: string) => {
      const file = join(tempDir(), 'replay.yaml');
      writeFileSync(file, stringify({ version: 1, ...config, journal }));
      return runCliAsync(['replay', journal, '--config', file]);
    };
    const [oldReplay, newReplay] = [await replay(oldJournal), await replay(newJournal)];
    expect(oldReplay.stderr).toBe('');
    expect(oldReplay.stdout).toBe(newReplay.stdout);
    expect(oldReplay.stdout.trim().split('\n').at(-1)).toBe('PAUSE: drift-after-failure');

    // export: the outcome gives the exchange its status.
    const [oldHar, newHar] = [
      await exportHar(oldJournal, 'agent-1'),
      await exportHar(newJournal, 'agent-1'),
    ];
    const entries = (h: { out: string }) =>
      (JSON.parse(readFileSync(h.out, 'utf8')) as { log: { entries: unknown[] } }).log.entries;
    expect(entries(oldHar)).toEqual(entries(newHar));
    expect(entries(oldHar)).toEqual([
      expect.objectContaining({ response: expect.objectContaining({ status: 200 }) }),
    ]);

    // restart: the same sessions, events (with their statuses) and state.
    const [older, newer] = [await start(oldDir), await start(newDir)];
    const views = async (x: TestGateway) => {
      const api = adminClient(x.gw.admin.port, ADMIN);
      const paths = ['/api/sessions', '/api/denies', ...AGENTS.map((a) => `/api/sessions/${a}`)];
      paths.push('/api/sessions/agent-1/events');
      return unchained(await Promise.all(paths.map(async (p) => (await api.get(p)).json)));
    };
    const oldViews = await views(older);
    expect(oldViews).toEqual(await views(newer));
    expect((oldViews as [unknown, ...unknown[]]).at(-1)).toMatchObject({
      events: [expect.objectContaining({ status: 200 })],
    });
    expect((oldViews as unknown[])[1]).toMatchObject({
      denies: [
        expect.objectContaining({ pattern: denied, session: 'agent-1' }),
        expect.objectContaining({ pattern: 'evil.test', session: null }),
      ],
    });
    // agent-1's deny pattern (a `block` record) refuses; agent-3's failure (its result, `ref`)
    // marked the rule: its next crossing pauses.
    for (const x of [older, newer]) {
      const refused = await viaProxy(x.proxyUrl, `${up.url}/denied/x`, agentAuth(id1, token1));
      expect(refused.status).toBe(403);
      expect(refused.body).toContain(`blocked by an operator (d`);
      expect((await egress(x, 'agent-3')).json).toMatchObject({
        verdict: 'PAUSE',
        boundary: 'drift-after-failure',
      });
    }
  });

  it('an old flow or tunnel record names its request by `ref`, read as `rid`', () => {
    const file = join(tempDir(), 'journal.jsonl');
    const line = (seq: number, type: string) =>
      `{"seq":${seq},"ts":"2026-01-01T00:00:00.000Z","type":"${type}","flow":"connect","session":"s","target":"h:443","ref":7,"change":"frozen","reason":"session paused"}`;
    writeFileSync(file, `${line(1, 'tunnel')}\n${line(2, 'flow')}\n`);
    const records = readAll(file);
    expect(records.map((r) => ['rid' in r && r.rid, 'ref' in r])).toEqual([
      [7, false],
      [7, false],
    ]);
  });
});
