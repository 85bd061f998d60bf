import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import type { RunningGateway } from '../../src/gateway.js';
import { startGateway } from '../../src/gateway.js';
import type { EventRecord, JournalRecord, PauseJournalRecord } from '../../src/journal/records.js';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import { AGENT_TOKEN, readRecords } from '../helpers/gateway.js';
import { mcpClient, refused, startSupergateway } from '../helpers/mcp.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * trajgate's own files through the real server-filesystem (supergateway on port 0), allowed on the
 * whole folder that holds the agent's workspace and trajgate's data: the server alone would
 * read and write trajgate's files. Through trajgate every tool, by every spelling (absolute,
 * relative, `..`, `//`, a symlink, a hard link, a parent folder), is a JSON-RPC error with a
 * one-line reason, one event record, the session paused by `trajgate-files`, and nothing
 * reaching the server; approvals and approve-once do not let it through.
 */
const root = tempDir();
const ws = join(root, 'ws');

interface Stage {
  readonly gw: RunningGateway;
  readonly data: string;
  readonly file: string;
  readonly api: AdminClient;
  records(): JournalRecord[];
}

/** A gateway on a config file of its own with its data in `root/<name>`; its admin token generated there. */
async function stage(
  name: string,
  keys: Record<string, unknown>,
  upstream: string,
): Promise<Stage> {
  const data = join(root, name);
  const file = join(root, 'etc', `${name}.yaml`);
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(
    file,
    stringify({
      version: 1,
      workspace: ws,
      journal: join(data, 'journal.jsonl'),
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
      agents: [{ id: 'agent-1', token: AGENT_TOKEN }],
      bridge: { upstream },
      ...keys,
    }),
  );
  const gw = await startGateway(loadConfigFile(file), { log: pino({ level: 'silent' }) });
  afterAll(() => gw.stop());
  const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
  const api = adminClient(gw.admin.port, token);
  return { gw, data, file, api, records: () => readRecords(join(data, 'journal.jsonl')) };
}

mkdirSync(ws);
writeFileSync(join(ws, 'notes.txt'), 'the agent’s own notes');
const sg = await startSupergateway([root]);
const s = await stage('data', { policy: { pause: 'block' } }, sg.url);
const TOKEN_FILE = join(s.data, 'admin-token');
const JOURNAL = join(s.data, 'journal.jsonl');
const TOKEN_TEXT = readFileSync(TOKEN_FILE, 'utf8');
// What an agent (or a process beside it) may have set up in its workspace.
symlinkSync('../data', join(ws, 'data-link'));
linkSync(TOKEN_FILE, join(ws, 'token-link'));
linkSync(JOURNAL, join(ws, 'journal-link'));

const clients: Client[] = [];
afterAll(() => Promise.all(clients.map((c) => c.close().catch(() => undefined))));
afterEach(async () => {
  if (s.gw.sessions.isPaused('agent-1')) s.gw.sessions.resume('agent-1', { reset: true });
});
async function client(url = `http://127.0.0.1:${s.gw.bridge.port}/mcp`): Promise<Client> {
  const c = await mcpClient(url, AGENT_TOKEN);
  clients.push(c);
  return c;
}
const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]?.text ?? '';
const events = (records: readonly JournalRecord[]) =>
  records.filter((r): r is EventRecord => r.type === 'event');

describe('control: the server alone', () => {
  it('reads the admin token and lists the data folder', async () => {
    const direct = await client(sg.url);
    const read = await direct.callTool({ name: 'read_text_file', arguments: { path: TOKEN_FILE } });
    expect(text(read)).toBe(TOKEN_TEXT);
    const list = await direct.callTool({ name: 'list_directory', arguments: { path: s.data } });
    expect(text(list)).toContain('admin-token');
  });
});

describe("trajgate's files through the bridge", () => {
  const outside = join(root, 'moved');
  it.each([
    ['read_text_file', { path: TOKEN_FILE }],
    ['read_text_file', { path: '../data/admin-token' }],
    ['read_text_file', { path: `${ws}//..//data/./admin-token` }],
    ['read_text_file', { path: 'data-link/admin-token' }],
    ['read_text_file', { path: 'token-link' }],
    ['read_text_file', { path: s.file }],
    ['read_multiple_files', { paths: [join(ws, 'notes.txt'), TOKEN_FILE] }],
    ['get_file_info', { path: 'data-link/journal.jsonl' }],
    ['write_file', { path: JOURNAL, content: '' }],
    ['write_file', { path: 'journal-link', content: '' }],
    ['write_file', { path: 'data-link/admin-token', content: 'mine' }],
    ['edit_file', { path: TOKEN_FILE, edits: [{ oldText: TOKEN_TEXT.trim(), newText: 'x' }] }],
    ['move_file', { source: s.data, destination: outside }],
    ['move_file', { source: root, destination: `${root}-moved` }],
    ['move_file', { source: join(ws, 'notes.txt'), destination: join(s.data, 'notes.txt') }],
    ['create_directory', { path: join(s.data, 'captures') }],
    ['list_directory', { path: s.data }],
    ['list_directory', { path: 'data-link' }],
    ['directory_tree', { path: s.data }],
  ])('%s %j: refused, one record, paused by trajgate-files, nothing sent', async (name, args) => {
    const a = await client();
    const before = s.records().length;
    const journal = readFileSync(JOURNAL, 'utf8');
    const err = await refused(a.callTool({ name, arguments: args }));
    expect(err.code).toBe(-32001);
    // The text for the model, and the one-line reason beside it.
    expect(err.message).toMatch(/trajgate paused this session/);
    expect(err.data).toMatchObject({ verdict: 'PAUSE', boundary: 'trajgate-files' });
    expect(err.data?.reason).toMatch(
      /^(read|write) of trajgate's own files \(.*\): they are never/,
    );
    expect(err.data?.reason).not.toMatch(/\n/);
    expect(err.message).not.toContain(TOKEN_TEXT.trim());
    const added = s.records().slice(before);
    const judged = events(added);
    expect(judged.map((e) => [e.verdict, e.boundary]).at(-1)).toEqual(['PAUSE', 'trajgate-files']);
    // One record for the refusal (beside the pause record written with it); for
    // read_multiple_files the workspace file allowed before it.
    expect(judged.filter((e) => e.verdict !== 'ALLOW')).toHaveLength(1);
    expect(added.filter((r) => r.type === 'pause')).toHaveLength(1);
    // The call's outcome, if written yet, is the refusal's: nothing came back from the server.
    for (const o of added.filter((r) => r.type === 'outcome'))
      expect(o).toMatchObject({ bytesDown: 0, error: expect.stringMatching(/^PAUSE: /) });
    expect(s.gw.guard.session('agent-1')?.pausedBy).toBe('trajgate-files');
    // Nothing reached the server: every file as it was, the journal only appended to.
    expect(readFileSync(TOKEN_FILE, 'utf8')).toBe(TOKEN_TEXT);
    expect(readFileSync(JOURNAL, 'utf8').startsWith(journal)).toBe(true);
    expect(readFileSync(join(ws, 'notes.txt'), 'utf8')).toBe('the agent’s own notes');
  });

  it('the workspace itself still works, a listing of it too (list_directory is a tree read: of the data folder’s parent it is refused above)', async () => {
    const a = await client();
    const read = await a.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } });
    expect(text(read)).toBe('the agent’s own notes');
    const list = await a.callTool({ name: 'list_directory', arguments: { path: ws } });
    expect(text(list)).toContain('notes.txt');
    expect(s.gw.sessions.isPaused('agent-1')).toBe(false);
  });

  it('an approval covering the path does not let it through', async () => {
    const approved = await s.api.post('/api/sessions/agent-1/approve', {
      pattern: `${root}/**`,
      kind: 'read',
    });
    expect(approved.status).toBe(201);
    const a = await client();
    // The approval covers reads there (control)…
    await a.callTool({ name: 'read_text_file', arguments: { path: 'notes.txt' } });
    expect(events(s.records()).at(-1)).toMatchObject({ verdict: 'ALLOW', approved: true });
    // …but not trajgate's own files.
    const err = await refused(
      a.callTool({ name: 'read_text_file', arguments: { path: TOKEN_FILE } }),
    );
    expect(err.data?.reason).toMatch(/no approval covers them/);
    const last = events(s.records()).at(-1);
    expect(last).toMatchObject({ verdict: 'PAUSE', boundary: 'trajgate-files', approved: false });
  });
});

describe('trajgate replay', () => {
  it('gives the verdicts of the journal, trajgate-files included (config and files as live)', async () => {
    const recorded = events(s.records()).filter((e) => e.held !== true);
    expect(recorded.filter((e) => e.boundary === 'trajgate-files').length).toBeGreaterThan(15);
    const r = await runCliAsync(['replay', JOURNAL, '--config', s.file, '--json']);
    expect(r.stderr).toBe('');
    const replayed = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { verdict: string; boundary: string | null });
    expect(replayed.map((v) => [v.verdict, v.boundary])).toEqual(
      recorded.map((e) => [e.verdict, e.boundary]),
    );
  });
});

describe('approve once and resume, with pause: hold', () => {
  it('judge the held call again: PAUSE again, still nothing sent; deny ends it', async () => {
    const hook = await startWebhook();
    const policy = { pause: 'hold', holdTimeout: '20s' };
    const h = await stage('held', { policy, notify: { webhook: hook.url } }, sg.url);
    const token = join(h.data, 'admin-token');
    const a = await mcpClient(`http://127.0.0.1:${h.gw.bridge.port}/mcp`, AGENT_TOKEN);
    clients.push(a);
    const call = refused(a.callTool({ name: 'read_text_file', arguments: { path: token } }));
    const isPause = (r: JournalRecord): r is PauseJournalRecord => r.type === 'pause';
    const first = (await waitForRecords(h, isPause)).find(isPause) as PauseJournalRecord;
    const rid = first.held[0]?.rid as number;
    expect(first.boundary).toBe('trajgate-files');
    // The notification offers no approval to suggest: none would cover it.
    await waitFor(() => hook.deliveries.length > 0);
    expect(hook.deliveries[0]?.body.links).toMatchObject({
      approveOnce: expect.any(String),
      approvePattern: null,
      suggestion: null,
    });

    const once = await h.api.post('/api/sessions/agent-1/resume', { once: [rid] });
    expect(once.status).toBe(200);
    const judgedAgain = (r: JournalRecord) =>
      r.type === 'event' && r.rid === rid && r.held !== true;
    let records = await waitForRecords(h, judgedAgain);
    expect(records.filter(judgedAgain)).toEqual([
      expect.objectContaining({ verdict: 'PAUSE', boundary: 'trajgate-files', approved: false }),
    ]);

    expect((await h.api.post('/api/sessions/agent-1/resume', {})).status).toBe(200);
    records = await waitForRecords(h, judgedAgain, 2);
    expect(records.filter(judgedAgain).map((e) => (e as EventRecord).boundary)).toEqual([
      'trajgate-files',
      'trajgate-files',
    ]);
    expect(h.gw.sessions.isPaused('agent-1')).toBe(true);

    expect((await h.api.post('/api/sessions/agent-1/deny', {})).status).toBe(200);
    const err = await call;
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/denied/);
    for (const o of h.records().filter((r) => r.type === 'outcome'))
      expect(o).toMatchObject({ bytesDown: 0, error: expect.stringMatching(/^PAUSE: /) });
  });
});
