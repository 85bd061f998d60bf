import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecord, RefusalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A runner's MCP call through ingest (`{"kind":"tool","target":"mcp__SERVER__TOOL","arguments"}`,
 * what `trajgate check --hook claude-code` sends): with `bridge.name: files` the gateway judges
 * `mcp__files__TOOL` as the bridge judges `tools/call TOOL` (the tool map, paths resolved in the
 * workspace), and `ReadMcpResourceTool` of that server as `resources/read`. Other servers, or no
 * bridge.name, make one `tool` event by the full name. One agent per case: verdicts count.
 */
const ws = tempDir();
const AGENTS = [
  'write',
  'move',
  'tilde',
  'missing',
  'list',
  'unknown',
  'other',
  'configured',
  'resource',
  'resource-other',
  'resource-memo',
  'bad',
  'plain',
];
let g: TestGateway;
let bridge: string;
let bare: TestGateway;
let bareBridge: string;
beforeAll(async () => {
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'src/a.ts'), '');
  ({ g, bridge } = await startIngestGateway(ws, AGENTS, {
    name: 'files',
    tools: { run_command: { kind: 'command', target: 'cwd' } },
  }));
  ({ g: bare, bridge: bareBridge } = await startIngestGateway(ws, ['plain']));
});
afterAll(async () => {
  await g.stop();
  await bare.stop();
});

const ingest = (id: string, body: unknown) => postAsAgent(`${bridge}/events`, id, body);
const mcp = (id: string, tool: string, args: Record<string, unknown>) =>
  ingest(id, { kind: 'tool', target: tool, arguments: args, call: `toolu_${id}` });
const events = (gw: TestGateway, session: string) =>
  gw.records().filter((r): r is EventRecord => r.type === 'event' && r.session === session);
const judged = (gw: TestGateway, session: string) =>
  events(gw, session).map((e) => [e.kind, e.resolved ?? e.target, e.verdict]);

describe('mcp__<bridge.name>__TOOL is judged as the bridge judges tools/call TOOL', () => {
  it('a write in the workspace: one write event, its path resolved there', async () => {
    const res = await mcp('write', 'mcp__files__write_file', { path: 'src/b.ts', content: 'x' });
    expect(res.json).toMatchObject({ verdict: 'ALLOW', allowed: true });
    expect(judged(g, 'write')).toEqual([['write', join(ws, 'src/b.ts'), 'ALLOW']]);
    expect(events(g, 'write')[0]).toMatchObject({ source: 'ingest', call: 'toolu_write' });
  });

  it('move_file out of the workspace: read and write of its source, then the write outside pauses', async () => {
    const res = await mcp('move', 'mcp__files__move_file', {
      source: 'src/a.ts',
      destination: '/etc/cron.d/x',
    });
    expect(res.json).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace', allowed: false });
    expect(judged(g, 'move')).toEqual([
      ['read', join(ws, 'src/a.ts'), 'ALLOW'],
      ['write', join(ws, 'src/a.ts'), 'ALLOW'],
      ['write', '/etc/cron.d/x', 'PAUSE'],
    ]);
    // The call's id names its first event, which its result links to.
    expect(events(g, 'move').map((e) => e.call)).toEqual(['toolu_move', undefined, undefined]);
  });

  it('a configured tool (bridge.tools) maps too: run_command in /tmp pauses', async () => {
    const res = await mcp('configured', 'mcp__files__run_command', { cwd: '/tmp', cmd: 'ls' });
    expect(res.json).toMatchObject({ verdict: 'PAUSE', boundary: 'workspace' });
    expect(judged(g, 'configured')).toEqual([['command', '/tmp', 'PAUSE']]);
  });

  it('a call naming no path crosses nothing: one internal event', async () => {
    const res = await mcp('list', 'mcp__files__list_allowed_directories', {});
    expect(res.json).toMatchObject({ verdict: 'ALLOW' });
    expect(judged(g, 'list')).toEqual([
      ['internal', 'mcp__files__list_allowed_directories', 'ALLOW'],
    ]);
  });

  it('a tool the map does not know is the tool event the bridge makes', async () => {
    const res = await mcp('unknown', 'mcp__files__deploy', { env: 'prod' });
    expect(res.json).toMatchObject({ verdict: 'REVIEW', boundary: 'tool' });
    expect(judged(g, 'unknown')).toEqual([['tool', 'deploy', 'REVIEW']]);
  });

  it('another server: one tool event by the full name, its arguments not read', async () => {
    const res = await mcp('other', 'mcp__github__write_file', { path: '/etc/x' });
    expect(res.json).toMatchObject({ verdict: 'REVIEW', boundary: 'tool' });
    expect(judged(g, 'other')).toEqual([['tool', 'mcp__github__write_file', 'REVIEW']]);
  });

  const refused: [string, string, Record<string, unknown>, string, RegExp][] = [
    [
      'tilde',
      'mcp__files__read_file',
      { path: '~/.ssh/id_rsa' },
      'E_PATH_REFUSED',
      /tools\/call read_file: path "~\/.ssh\/id_rsa" starts with ~/,
    ],
    [
      'missing',
      'mcp__files__write_file',
      { content: 'x' },
      'E_EVENT_INVALID',
      /tool write_file: argument "path" must be a non-empty string, got nothing/,
    ],
  ];
  it.each(refused)('%s: %s %j → 400 %s, a refusal record', async (id, tool, args, code, why) => {
    const res = await mcp(id, tool, args);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code, message: expect.stringMatching(why) });
    const refusal = g.records().findLast((r) => r.type === 'refusal') as RefusalRecord;
    expect(refusal).toMatchObject({ source: 'ingest', session: id, status: 400 });
    expect(refusal.reason).toMatch(why);
    expect(events(g, id)).toEqual([]);
  });

  it('leaving the arguments out does not skip the mapping', async () => {
    const res = await ingest('missing', { kind: 'tool', target: 'mcp__files__read_file' });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toMatch(/argument "path" must be a non-empty string/);
  });
});

describe('ReadMcpResourceTool', () => {
  const resource = (id: string, server: string, uri: string) =>
    mcp(id, 'ReadMcpResourceTool', { server, uri });

  it('of the bridged server, a file: URI → a read of its path', async () => {
    const res = await resource('resource', 'files', `file://${join(ws, 'src/a.ts')}`);
    expect(res.json).toMatchObject({ verdict: 'ALLOW' });
    expect(judged(g, 'resource')).toEqual([['read', join(ws, 'src/a.ts'), 'ALLOW']]);
  });

  it('of the bridged server, another scheme → the bridge’s resources/read tool event', async () => {
    await resource('resource-memo', 'files', 'memo://notes');
    expect(judged(g, 'resource-memo')).toEqual([['tool', 'resources/read memo://notes', 'REVIEW']]);
  });

  it('of another server → a tool event by name', async () => {
    await resource('resource-other', 'github', `file://${join(ws, 'src/a.ts')}`);
    expect(judged(g, 'resource-other')).toEqual([['tool', 'ReadMcpResourceTool', 'REVIEW']]);
  });
});

describe('bad input and no bridge.name', () => {
  it.each([
    [{ kind: 'read', target: join(ws, 'a'), arguments: {} }, /taken with kind "tool" only/],
    [
      { kind: 'tool', target: 'mcp__files__x', arguments: ['a'] },
      /must be an object, got an array/,
    ],
  ])('%j → 400, a refusal record, nothing judged', async (body, why) => {
    const res = await ingest('bad', body);
    expect(res.status).toBe(400);
    expect(res.json.error.message).toMatch(why);
    expect(g.records().at(-1)).toMatchObject({ type: 'refusal', session: 'bad', status: 400 });
    expect(events(g, 'bad')).toEqual([]);
  });

  it('without bridge.name an mcp__ call is one tool event by its full name', async () => {
    const res = await postAsAgent(`${bareBridge}/events`, 'plain', {
      kind: 'tool',
      target: 'mcp__files__write_file',
      arguments: { path: '/etc/x' },
    });
    expect(res.json).toMatchObject({ verdict: 'REVIEW', boundary: 'tool' });
    expect(judged(bare, 'plain')).toEqual([['tool', 'mcp__files__write_file', 'REVIEW']]);
  });
});
