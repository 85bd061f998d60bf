import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { EventRecord, ResultRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A recorded Claude Code session (test/fixtures/hooks/claude-code-session.jsonl: every hook
 * input of a small bug fix, PreToolUse and PostToolUse of Read, Glob, Grep, LS, Write, Edit,
 * MultiEdit, NotebookEdit, Bash and WebFetch, two calls run side by side whose results come
 * back in the other order, plus session events) replayed line by line
 * through `trajgate check --hook claude-code` against a real gateway whose workspace is the
 * session's cwd. A normal session must run through: every call exits 0, no REVIEW.
 */
const RECORDED_CWD = '/home/dev/projects/todo-api';
const TOKEN = 'claude-agent-token-0123456789abcdef';
const FIXTURE = join(import.meta.dirname, '../fixtures/hooks/claude-code-session.jsonl');
const ws = tempDir();
// The docs host resolves to a public address (no DNS in tests); it is on the allowlist.
const lookup: Lookup = async () => ['93.184.216.34'];
let g: TestGateway;
let lines: string[];
beforeAll(async () => {
  for (const dir of ['src/routes', 'test', 'notebooks'])
    mkdirSync(join(ws, dir), { recursive: true });
  writeFileSync(join(ws, 'src/routes/todos.ts'), '');
  writeFileSync(join(ws, 'src/validate.ts'), '');
  g = await startTestGateway(
    {
      workspace: ws,
      agents: [{ id: 'claude', token: TOKEN }],
      network: { allow: ['docs.example.com'] },
    },
    { dir: tempDir(), lookup },
  );
  lines = readFileSync(FIXTURE, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replaceAll(RECORDED_CWD, ws));
});
afterAll(() => g.stop());

const hookOf = (line: string) =>
  JSON.parse(line) as { hook_event_name: string; tool_name?: string; tool_use_id?: string };

describe('a recorded Claude Code session through check --hook claude-code', () => {
  it('covers every mapped tool, before and after', () => {
    const tools = new Set(lines.map((l) => hookOf(l).tool_name).filter(Boolean));
    expect([...tools].sort()).toEqual([
      'Bash',
      'Edit',
      'Glob',
      'Grep',
      'LS',
      'MultiEdit',
      'NotebookEdit',
      'Read',
      'WebFetch',
      'Write',
    ]);
  });

  it('every hook call exits 0 and the journal holds no REVIEW', async () => {
    const bridge = `http://127.0.0.1:${g.gw.bridge.port}`;
    for (const [i, line] of lines.entries()) {
      const r = await runCliPiped(['check', '--hook', 'claude-code', '--bridge', bridge], {
        input: line,
        env: { TRAJGATE_AGENT_TOKEN: TOKEN, TRAJGATE_BRIDGE: '' },
      });
      expect({ line: i + 1, ...r }).toEqual({ line: i + 1, status: 0, stdout: '', stderr: '' });
    }
    const records = g.records();
    const events = records.filter((r): r is EventRecord => r.type === 'event');
    const results = records.filter((r): r is ResultRecord => r.type === 'result');
    const hooks = lines.map(hookOf);
    const pre = hooks.filter((h) => h.hook_event_name === 'PreToolUse');
    const post = hooks.filter((h) => h.hook_event_name.startsWith('PostToolUse'));

    expect(events.map((e) => e.verdict)).toEqual(pre.map(() => 'ALLOW'));
    expect(events.every((e) => e.session === 'claude' && e.source === 'ingest')).toBe(true);
    expect(records.filter((r) => r.type === 'refusal')).toEqual([]);
    expect(events.map((e) => e.kind)).toEqual([
      'read', // Glob src/**/*.ts
      'read', // Grep in src (relative)
      'read', // LS test
      'read', // Read
      'read', // Read
      'network', // WebFetch
      'write', // Edit
      'write', // MultiEdit
      'write', // Write
      'command', // Bash: npm test (fails)
      'read', // Read src/routes/todos.ts (relative)
      'write', // Edit
      'write', // NotebookEdit
      'command', // Bash: npm test
      'read', // Grep in src, glob routes/*.ts (run beside the next)
      'read', // Read
    ]);
    // Listings and searches read the tree their pattern can reach.
    expect(events[0]).toMatchObject({ target: join(ws, 'src'), tree: true });
    expect(events[1]).toMatchObject({ target: `${ws}/src`, tree: true });
    expect(events[2]).toMatchObject({ target: `${ws}/test`, tree: true });
    expect(events[3]).not.toHaveProperty('tree');
    expect(events[14]).toMatchObject({ target: `${ws}/src/routes`, tree: true });
    expect(events[5]).toMatchObject({
      method: 'GET',
      target: expect.stringMatching(/^https:\/\/docs/),
    });

    // Each PostToolUse is recorded as its call's result, linked by tool_use_id to the event
    // asked with it: the last two calls ran side by side and ended in the other order.
    expect(results).toHaveLength(post.length);
    expect(events.map((e) => e.call)).toEqual(pre.map((h) => h.tool_use_id));
    expect(results.map((r) => r.call)).toEqual(post.map((h) => h.tool_use_id));
    expect(results.at(-1)?.call).toBe(events.at(-2)?.call);
    for (const result of results) {
      const event = events.find((e) => e.call === result.call) as EventRecord;
      expect(result).toMatchObject({
        session: 'claude',
        ref: event.seq,
        kind: event.kind,
        target: event.target,
        tool: pre[events.indexOf(event)]?.tool_name,
      });
      expect(result).not.toHaveProperty('unlinked');
      expect(result.seq).toBeGreaterThan(event.seq);
    }
    const failed = results.filter((r) => !r.ok);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      tool: 'Bash',
      error: expect.stringMatching(/^Command failed with exit code 1 FAIL/),
    });
  }, 120_000); // one CLI start per hook input, as in a real session
});
