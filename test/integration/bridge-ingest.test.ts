import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { refusingPort } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The ingest route (`POST /events` on the bridge listener, no tool server behind it) and
 * `trajgate check`, the runner-hook client of it: exit 0 for ALLOW, 2 for a refusal with the
 * reason on stderr. Each refusing case uses its own agent, so sessions do not interfere.
 */
const ws = tempDir();
const AGENTS = ['seed', 'hold', 'cli-ok', 'cli-out', 'hook-w', 'hook-ok', 'bad'];
let g: TestGateway;
let bridge: string;
beforeAll(async () => {
  ({ g, bridge } = await startIngestGateway(ws, AGENTS));
});
afterAll(() => g.stop());

const ingest = (id: string | null, body: unknown, path = '/events') =>
  postAsAgent(`${bridge}${path}`, id, body);

const events = (session: string) =>
  g.records().filter((r): r is EventRecord => r.type === 'event' && r.session === session);

describe('POST /events', () => {
  it('answers the seed story with the decision JSON, journaled as ingest events', async () => {
    const story = [
      { kind: 'command', target: join(ws, 'tests') },
      { kind: 'write', target: join(ws, 'report.json') },
      { kind: 'network', target: 'https://example.test/api' },
    ];
    const answers = [];
    for (const e of story) answers.push(await ingest('seed', e));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.json.verdict)).toEqual(['ALLOW', 'ALLOW', 'REVIEW']);
    expect(answers[0]?.json).toEqual({
      verdict: 'ALLOW',
      boundary: null,
      count: 0,
      reason: 'no boundary crossed',
      allowed: true,
    });
    expect(answers[2]?.json).toMatchObject({ boundary: 'network', count: 1 });
    expect(answers[2]?.json.message).toMatch(/^trajgate refused this request: network https/);
    expect(events('seed').map((e) => [e.source, e.kind, e.verdict])).toEqual([
      ['ingest', 'command', 'ALLOW'],
      ['ingest', 'write', 'ALLOW'],
      ['ingest', 'network', 'REVIEW'],
    ]);
  });

  it('pauses on a write outside, then holds the next event until holdTimeout', async () => {
    const t0 = Date.now();
    const out = await ingest('hold', { kind: 'write', target: '/etc/cron.d/x' });
    expect(out.json).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace' });
    expect(out.json.message).toMatch(/trajgate paused this session/);
    const next = ingest('hold', { kind: 'read', target: join(ws, 'a') });
    await waitFor(() => g.gw.sessions.held('hold').length === 1);
    const held = await next;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_900);
    expect(held.json).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace' });
    expect(held.json.message).toMatch(/No operator decided within the hold time/);
  });

  const bad = [
    { name: 'invalid JSON', body: '{"kind":', status: 400, code: 'E_EVENT_INVALID' },
    { name: 'an unknown kind', body: { kind: 'teleport', target: 'x' }, status: 400 },
    { name: 'a missing target', body: { kind: 'write' }, status: 400 },
    { name: 'a numeric target', body: { kind: 'write', target: 5 }, status: 400 },
    {
      name: 'a body over 64 KiB',
      body: { kind: 'write', target: 'x'.repeat(70_000) },
      status: 413,
    },
  ];
  it.each(bad)('$name → $status, journaled as a refusal, nothing judged', async (c) => {
    const before = events('bad').length;
    const res = await ingest('bad', c.body);
    expect(res.status).toBe(c.status);
    expect(res.json.error.code).toBe(c.status === 413 ? 'E_TOO_LARGE' : 'E_EVENT_INVALID');
    expect(g.records().at(-1)).toMatchObject({
      type: 'refusal',
      source: 'ingest',
      session: 'bad',
      status: c.status,
    });
    expect(events('bad').length).toBe(before);
  });

  it('without a bearer token → 401, and with no upstream other paths are 404', async () => {
    const res = await ingest(null, { kind: 'write', target: join(ws, 'a') });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toMatch(/agent token required/);
    const other = await ingest('bad', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, '/mcp');
    expect(other.status).toBe(404);
    expect(other.json.error.message).toMatch(/bridge\.upstream is not set/);
  });
});

describe('trajgate check', () => {
  const check = (id: string | null, args: string[], input?: string) =>
    runCliPiped(['check', ...args, '--bridge', bridge], {
      env: { TRAJGATE_AGENT_TOKEN: id === null ? '' : agentToken(id), TRAJGATE_BRIDGE: '' },
      ...(input === undefined ? {} : { input }),
    });

  it('--kind write inside → exit 0, nothing on stderr', async () => {
    const r = await check('cli-ok', ['--kind', 'write', '--target', join(ws, 'a.txt')]);
    expect(r).toMatchObject({ status: 0, stderr: '' });
    expect(events('cli-ok').at(-1)).toMatchObject({ source: 'ingest', verdict: 'ALLOW' });
  });

  it('--kind write outside → exit 2 with the reason on stderr', async () => {
    const r = await check('cli-out', ['--kind', 'write', '--target', '/etc/cron.d/x']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/trajgate paused this session/);
    expect(r.stderr).toContain(`Reason: write outside the workspace ${ws}`);
    expect(g.gw.sessions.isPaused('cli-out')).toBe(true);
  });

  const hook = (tool: string, input: Record<string, unknown>, cwd = ws) =>
    JSON.stringify({ hook_event_name: 'PreToolUse', tool_name: tool, tool_input: input, cwd });
  const hooks = [
    {
      id: 'hook-ok',
      stdin: hook('Read', { file_path: join(ws, 'a.txt') }),
      status: 0,
      kind: 'read',
    },
    { id: 'hook-ok', stdin: hook('Bash', { command: 'make test' }), status: 0, kind: 'command' },
    {
      id: 'hook-ok',
      stdin: hook('Write', { file_path: join(ws, 'b'), content: 'x' }),
      status: 0,
      kind: 'write',
    },
    {
      id: 'hook-w',
      stdin: hook('Write', { file_path: '/etc/x', content: 'x' }),
      status: 2,
      kind: 'write',
    },
  ];
  it.each(hooks)('--hook claude-code $stdin → exit $status', async (c) => {
    const r = await check(c.id, ['--hook', 'claude-code'], c.stdin);
    expect(r.status).toBe(c.status);
    if (c.status === 2) expect(r.stderr).toMatch(/Reason: write outside the workspace/);
    else expect(r.stderr).toBe('');
    expect(events(c.id).at(-1)).toMatchObject({ kind: c.kind, source: 'ingest' });
  });

  it('a refused token → exit 2 naming the problem', async () => {
    const r = await check(null, ['--kind', 'read', '--target', join(ws, 'a')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/agent token required/);
  });

  it('bridge down → exit 2, "cannot reach", the action refused', async () => {
    const port = await refusingPort();
    const r = await runCliPiped(
      [
        'check',
        '--kind',
        'read',
        '--target',
        join(ws, 'a'),
        '--bridge',
        `http://127.0.0.1:${port}`,
      ],
      { env: { TRAJGATE_AGENT_TOKEN: agentToken('cli-ok') } },
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+.*refusing read/,
    );
  });
});
