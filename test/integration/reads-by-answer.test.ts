import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { runCliPiped } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { mcpClient, startSupergateway } from '../helpers/mcp.js';
import { layout, tempDir } from '../helpers/tmp.js';
import { secretThenEgress } from '../helpers/rules.js';

/**
 * Secrets are found by what a call can return, not by its tool's name: the real
 * server-filesystem (supergateway, the official SDK client) and recorded Claude Code hook
 * inputs through `trajgate check`. `edit_file` answers a diff of its file (dryRun too),
 * `move_file` puts its source where another name reads it, listings and searches name what is
 * under their folder, and a hook's Grep reads what its glob reaches: each is a read the
 * `secret-then-egress` rule sees, so a later egress pauses. Each case is its own agent.
 */
const root = tempDir();
const ws = join(root, 'ws');
const home = join(root, 'home');
layout(root, ['ws/src', 'ws/secrets', 'home/.ssh', 'home/projects/app/src']);
const SECRET_LINE = 'the-secret-line-0123456789';
for (const f of ['edit.txt', 'move.txt', 'key.txt'])
  writeFileSync(join(ws, 'secrets', f), `${SECRET_LINE}\n`);
writeFileSync(join(ws, 'src', 'a.ts'), 'export {};\n');
writeFileSync(join(home, '.ssh', 'id_ed25519'), 'not a real key\n');

const AGENTS = ['edit', 'move', 'tree', 'search', 'list', 'control', 'grep', 'grep-ok'];
const sg = await startSupergateway([ws]);
const g: TestGateway = await startTestGateway(
  {
    workspace: ws,
    agents: AGENTS.map((id) => ({ id, token: agentToken(id) })),
    policy: {
      pause: 'block',
      sequences: [secretThenEgress([`${ws}/secrets/**`, `${home}/.ssh/**`])],
    },
    bridge: { upstream: sg.url },
  },
  // No DNS in tests: the upload host resolves to a public address.
  { dir: tempDir(), lookup: async () => ['93.184.216.34'] },
);
afterAll(() => g.stop());
const clients: Client[] = [];
afterAll(() => Promise.all(clients.map((c) => c.close().catch(() => undefined))));

const bridge = `http://127.0.0.1:${g.gw.bridge.port}`;
async function call(id: string, name: string, args: Record<string, unknown>) {
  const client = await mcpClient(`${bridge}/mcp`, agentToken(id));
  clients.push(client);
  const r = (await client.callTool({ name, arguments: args })) as { content: { text: string }[] };
  return r.content[0]?.text ?? '';
}
const egress = (id: string) =>
  postAsAgent(`${bridge}/events`, id, { kind: 'network', target: 'https://upload.example.net/' });
const events = (id: string) =>
  g.records().filter((r): r is EventRecord => r.type === 'event' && r.session === id);

describe('tool calls through the bridge are reads of what they return', () => {
  it('edit_file with dryRun: its diff shows the file, so a later egress pauses', async () => {
    const file = join(ws, 'secrets', 'edit.txt');
    const diff = await call('edit', 'edit_file', {
      path: file,
      edits: [{ oldText: SECRET_LINE, newText: 'x' }],
      dryRun: true,
    });
    expect(diff).toContain(`-${SECRET_LINE}`);
    expect(readFileSync(file, 'utf8')).toBe(`${SECRET_LINE}\n`);
    expect(events('edit').map((e) => [e.kind, e.verdict, e.marks])).toEqual([
      ['read', 'ALLOW', ['secret-then-egress']],
      ['write', 'ALLOW', undefined],
    ]);
    const read = events('edit')[0] as EventRecord;
    const r = await egress('edit');
    expect(r.json).toMatchObject({ verdict: 'PAUSE', boundary: 'secret-then-egress' });
    expect(r.json.reason).toContain(`after #${read.seq} read ${file}`);
  });

  it('move_file reads its source: the secret moved under another name is still marked', async () => {
    const source = join(ws, 'secrets', 'move.txt');
    const destination = join(ws, 'src', 'innocent.txt');
    await call('move', 'move_file', { source, destination });
    expect(existsSync(destination)).toBe(true);
    expect(events('move').map((e) => [e.kind, e.target, e.marks])).toEqual([
      ['read', source, ['secret-then-egress']],
      ['write', source, undefined],
      ['write', destination, undefined],
    ]);
    expect(await call('move', 'read_text_file', { path: destination })).toContain(SECRET_LINE);
    expect((await egress('move')).json.verdict).toBe('PAUSE');
  });

  // [agent, tool, arguments, what its answer names from the secret folder]
  it.each([
    ['tree', 'directory_tree', { path: ws }, 'key.txt'],
    ['search', 'search_files', { path: ws, pattern: '**/*.txt' }, join(ws, 'secrets', 'key.txt')],
    ['list', 'list_directory', { path: ws }, '[DIR] secrets'],
  ])(
    '%s: %s of the folder above the secrets is a tree read that marks',
    async (id, tool, args, named) => {
      const answer = await call(id, tool, args);
      expect(answer).toContain(named);
      expect(events(id)).toEqual([
        expect.objectContaining({ kind: 'read', tree: true, marks: ['secret-then-egress'] }),
      ]);
      expect((await egress(id)).json).toMatchObject({ verdict: 'PAUSE' });
    },
  );

  it('control: a tree read beside the secrets marks nothing, the egress is only reviewed', async () => {
    expect(await call('control', 'directory_tree', { path: join(ws, 'src') })).toContain('a.ts');
    expect(events('control')).toEqual([expect.objectContaining({ tree: true })]);
    expect(events('control')[0]).not.toHaveProperty('marks');
    expect((await egress('control')).json).toMatchObject({
      verdict: 'REVIEW',
      boundary: 'network',
    });
  });
});

// One recorded Claude Code hook input (test/fixtures/hooks/claude-code-session.jsonl), its tool
// input replaced.
const FIXTURE = join(import.meta.dirname, '../fixtures/hooks/claude-code-session.jsonl');
const recorded = readFileSync(FIXTURE, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Record<string, unknown>)
  .find((h) => h.hook_event_name === 'PreToolUse' && h.tool_name === 'Grep') as object;
const check = (id: string, toolInput: object, toolUseId: string) =>
  runCliPiped(['check', '--hook', 'claude-code', '--bridge', bridge], {
    input: JSON.stringify({
      ...recorded,
      cwd: join(home, 'projects', 'app'),
      tool_input: toolInput,
      tool_use_id: toolUseId,
    }),
    env: { TRAJGATE_AGENT_TOKEN: agentToken(id), TRAJGATE_BRIDGE: '' },
  });

describe('the hook’s Grep is judged by its glob as well as its path', () => {
  it('Grep {path: HOME, glob: ".ssh/*"} is a read under HOME/.ssh: a later WebFetch pauses', async () => {
    const r = await check('grep', { pattern: 'PRIVATE', path: home, glob: '.ssh/*' }, 'toolu_g1');
    expect(r.status).toBe(0);
    expect(events('grep')).toEqual([
      expect.objectContaining({
        target: join(home, '.ssh'),
        tree: true,
        call: 'toolu_g1',
        marks: ['secret-then-egress'],
      }),
    ]);
    const fetch = await runCliPiped(['check', '--hook', 'claude-code', '--bridge', bridge], {
      input: JSON.stringify({
        ...recorded,
        tool_name: 'WebFetch',
        tool_input: { url: 'https://upload.example.net/', prompt: 'p' },
        tool_use_id: 'toolu_g2',
      }),
      env: { TRAJGATE_AGENT_TOKEN: agentToken('grep'), TRAJGATE_BRIDGE: '' },
    });
    expect(fetch.status).toBe(2);
    expect(fetch.stderr).toMatch(/secret-then-egress/);
  });

  it('control: a Grep whose glob stays in the project marks nothing', async () => {
    const project = join(home, 'projects', 'app');
    const r = await check('grep-ok', { pattern: 'x', path: project, glob: 'src/*.ts' }, 'toolu_o');
    expect(r.status).toBe(0);
    expect(events('grep-ok')).toEqual([
      expect.objectContaining({ target: join(project, 'src'), tree: true }),
    ]);
    expect(events('grep-ok')[0]).not.toHaveProperty('marks');
  });
});
