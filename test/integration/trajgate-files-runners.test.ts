import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import { AGENT_TOKEN, FILE_ROUTES, startTestGateway } from '../helpers/gateway.js';
import { postAsAgent } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * trajgate's own files through the other ways in: the Claude Code hook (`trajgate check --hook
 * claude-code`, hook inputs shaped as test/fixtures/hooks/claude-code-session.jsonl records
 * them), POST /events ingest and the plain-HTTP adapter. trajgate's files, by any spelling, are
 * refused with a one-line reason, one event record, the session paused by `trajgate-files`,
 * and nothing reaching the tool server.
 */
const root = tempDir();
const ws = join(root, 'ws');
const data = join(root, 'data');
mkdirSync(ws);
mkdirSync(data);
writeFileSync(join(ws, 'notes.txt'), 'notes');

const seen: string[] = [];
const tools = createServer((req, res) => {
  seen.push(`${req.method} ${req.url}`);
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
afterAll(async () => {
  tools.closeAllConnections();
  await new Promise<void>((r) => tools.close(() => r()));
});

const g = await startTestGateway(
  {
    workspace: ws,
    agents: [{ id: 'agent-1', token: AGENT_TOKEN }],
    policy: { pause: 'block' },
    bridge: {
      upstream: `http://127.0.0.1:${(tools.address() as AddressInfo).port}`,
      protocol: 'http',
      routes: FILE_ROUTES,
    },
  },
  { dir: data },
);
afterAll(() => g.stop());
const TOKEN_FILE = join(data, 'admin-token');
const TOKEN_TEXT = readFileSync(TOKEN_FILE, 'utf8');
symlinkSync('../data', join(ws, 'data-link'));
linkSync(TOKEN_FILE, join(ws, 'token-link'));
const bridge = `http://127.0.0.1:${g.gw.bridge.port}`;

afterEach(() => {
  if (g.gw.sessions.isPaused('agent-1')) g.gw.sessions.resume('agent-1', { reset: true });
});

/** What one refused attempt added to the journal: one PAUSE by trajgate-files, and its pause. */
function expectOneRefusal(added: readonly JournalRecord[], source: string): EventRecord {
  const judged = added.filter((r): r is EventRecord => r.type === 'event');
  expect(judged).toHaveLength(1);
  expect(judged[0]).toMatchObject({ source, verdict: 'PAUSE', boundary: 'trajgate-files' });
  expect(added.filter((r) => r.type === 'pause')).toHaveLength(1);
  expect(g.gw.guard.session('agent-1')?.pausedBy).toBe('trajgate-files');
  expect(readFileSync(TOKEN_FILE, 'utf8')).toBe(TOKEN_TEXT);
  return judged[0] as EventRecord;
}

/** A PreToolUse hook input as Claude Code sends it (the recorded session's shape). */
// Each call has its own id, as Claude Code's do (an id asked twice is refused).
let calls = 0;
const preToolUse = (tool: string, input: Record<string, unknown>, cwd = ws) =>
  JSON.stringify({
    session_id: '5f1c2a7e-8b3d-4c9a-9e21-3d7b6f0a4c18',
    transcript_path: '/home/dev/.claude/projects/x.jsonl',
    cwd,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: tool,
    tool_input: input,
    tool_use_id: `toolu_01trajgatefiles${++calls}`,
  });

describe('the Claude Code hook', () => {
  it.each([
    ['Read', { file_path: TOKEN_FILE }, ws],
    ['Read', { file_path: join(ws, 'token-link') }, ws],
    ['Read', { file_path: join(ws, 'data-link', 'journal.jsonl') }, ws],
    ['Read', { file_path: `${ws}/../data/admin-token` }, ws],
    ['Read', { file_path: 'data-link/admin-token', limit: 3 }, ws],
    ['Write', { file_path: join(data, 'journal.jsonl'), content: '' }, ws],
    ['Edit', { file_path: TOKEN_FILE, old_string: TOKEN_TEXT.trim(), new_string: 'x' }, ws],
    ['LS', { path: data }, ws],
    ['Glob', { pattern: '*' }, data],
    ['Bash', { command: 'cat admin-token', description: 'Read it' }, data],
  ])('%s %j in %s: exit 2, one line, one record, paused', async (tool, input, cwd) => {
    const before = g.records().length;
    const r = await runCliPiped(['check', '--hook', 'claude-code', '--bridge', bridge], {
      input: preToolUse(tool, input, cwd),
      env: { TRAJGATE_AGENT_TOKEN: AGENT_TOKEN, TRAJGATE_BRIDGE: '' },
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    // The text for the model; its reason is one line.
    expect(r.stderr).toMatch(/^trajgate paused this session: /);
    expect(r.stderr).toMatch(
      /^Reason: \w+ of trajgate's own files \([^\n]*\): they are never the agent's, and no approval covers them\.$/m,
    );
    expect(r.stderr).not.toContain(TOKEN_TEXT.trim());
    expectOneRefusal(g.records().slice(before), 'ingest');
  });
});

describe('POST /events', () => {
  it.each([
    { kind: 'read', target: TOKEN_FILE },
    { kind: 'read', target: 'token-link' },
    { kind: 'read', target: 'data-link/link-key' },
    { kind: 'write', target: root },
    { kind: 'write', target: join(data, 'captures', '1.json') },
    { kind: 'command', target: data },
  ])('%j: PAUSE trajgate-files, one record', async (event) => {
    const before = g.records().length;
    const out = await postAsAgent(`${bridge}/events`, 'agent-1', event);
    expect(out.json).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'trajgate-files',
      allowed: false,
    });
    expect(out.json.reason).toMatch(
      /^\w+ of trajgate's own files \(.*\): they are never the agent's/,
    );
    expectOneRefusal(g.records().slice(before), 'ingest');
  });
});

describe('the HTTP adapter', () => {
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await request(`${bridge}${path}`, {
      method: method as 'GET',
      headers: {
        authorization: `Bearer ${AGENT_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 30_000,
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  };

  it.each([
    ['GET', `/fs/read?path=${encodeURIComponent(TOKEN_FILE)}`, undefined],
    ['GET', '/fs/read?path=token-link', undefined],
    ['POST', '/fs/write', { path: 'data-link/journal.jsonl', content: '' }],
    ['DELETE', '/files?path=data-link', undefined],
  ])('%s %s: 403 PAUSE, one record, the tool server sees nothing', async (method, path, body) => {
    const before = g.records().length;
    const tooled = seen.length;
    const res = await send(method, path, body);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=trajgate-files');
    expect(res.text).toMatch(/trajgate's own files/);
    expect(seen.length).toBe(tooled);
    expectOneRefusal(g.records().slice(before), 'bridge');
  });

  it('a file in the workspace still goes through (control)', async () => {
    const res = await send('GET', '/fs/read?path=notes.txt');
    expect(res.status).toBe(200);
    expect(seen.at(-1)).toMatch(/^GET \/fs\/read\?path=/);
  });
});
