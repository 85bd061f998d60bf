import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { adminClient } from '../helpers/admin.js';
import { fileGateway } from '../helpers/file-gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { mcpClient, mcpPerTest, refused, startSupergateway } from '../helpers/mcp.js';
import { startMcpTools } from '../helpers/mcp-tools.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The tool policy on the bridge: each agent's tools/list answer holds only the tools it may
 * call, and a call of another is refused for the model, journaled as a `tool` event refused
 * whatever approves it; runners' hooks are held to the same lists. Against the official
 * server-filesystem (behind supergateway) and an SDK server answering JSON or an event stream.
 */
const ws = tempDir();
writeFileSync(join(ws, 'notes.txt'), 'notes inside');
const sg = await startSupergateway([ws]);
const mcp = mcpPerTest();

const agents = [
  { id: 'agent-1', token: agentToken('agent-1'), roles: ['writers'] },
  { id: 'agent-2', token: agentToken('agent-2'), tools: { deny: ['read_media_file'] } },
];
const start = (upstream: string, extra: Record<string, unknown> = {}) =>
  mcp.start({
    workspace: ws,
    agents,
    roles: { writers: { tools: { allow: ['files:write_file'] } } },
    policy: { pause: 'hold', holdTimeout: '10s' },
    bridge: { upstream, name: 'files', tools: { allow: ['read_*', 'list_*'] } },
    ...extra,
  });
const names = (list: { tools: { name: string }[] }) => list.tools.map((t) => t.name).sort();
const refusedTools = (g: TestGateway) =>
  g
    .records()
    .filter((r) => r.type === 'event' && (r as { denied?: string }).denied !== undefined)
    .map((r) => r as EventRecord);

describe('server-filesystem: two agents, two lists', () => {
  it('each sees only its tools, and a hidden tool called anyway is refused and journaled', async () => {
    const all = names(await mcp.keep(await mcpClient(sg.url, 'unused-token')).listTools());
    expect(all).toEqual(expect.arrayContaining(['write_file', 'move_file', 'read_media_file']));
    const g = await start(sg.url);
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    const a2 = await mcp.connect(g, agentToken('agent-2'));
    const reads = all.filter((n) => n.startsWith('read_') || n.startsWith('list_'));
    expect(names(await a1.listTools())).toEqual([...reads, 'write_file'].sort());
    expect(names(await a2.listTools())).toEqual(reads.filter((n) => n !== 'read_media_file'));

    const target = join(ws, 'from-agent-2.txt');
    const call = a2.callTool({ name: 'write_file', arguments: { path: target, content: 'x' } });
    const err = await refused(call);
    const reason = 'tool write_file is not in the tools allowed to agent-2 (bridge.tools.allow)';
    expect(err.message).toContain(reason);
    expect(err.data).toMatchObject({ verdict: 'REVIEW', boundary: 'tool' });
    expect(existsSync(target)).toBe(false);
    expect(refusedTools(g)).toEqual([
      expect.objectContaining({
        session: 'agent-2',
        source: 'bridge',
        kind: 'tool',
        target: 'write_file',
        denied: reason,
        verdict: 'REVIEW',
        boundary: 'tool',
      }),
    ]);
    // agent-1's role allows it: the server writes the file.
    const wrote = join(ws, 'from-agent-1.txt');
    await a1.callTool({ name: 'write_file', arguments: { path: wrote, content: 'y' } });
    expect(existsSync(wrote)).toBe(true);
  });

  it('neither review: pass nor an approval of the tool lets a hidden one through', async () => {
    const g = await start(sg.url, { policy: { review: 'pass' } });
    g.gw.sessions.approve({ pattern: 'move_file', kind: 'tool', session: 'agent-1' });
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    const source = join(ws, 'notes.txt');
    const moved = join(ws, 'moved.txt');
    const err = await refused(
      a1.callTool({ name: 'move_file', arguments: { source, destination: moved } }),
    );
    expect(err.message).toContain('tool move_file is not in the tools allowed to agent-1');
    expect(existsSync(source) && !existsSync(moved)).toBe(true);
  });

  it("a runner's hook call of a hidden tool is refused by the same lists", async () => {
    const g = await start(sg.url);
    const events = `http://127.0.0.1:${g.gw.bridge.port}/events`;
    const ask = (id: string, tool: string) =>
      postAsAgent(events, id, {
        kind: 'tool',
        target: `mcp__files__${tool}`,
        arguments: { path: join(ws, 'notes.txt') },
      });
    const media = await ask('agent-2', 'read_media_file');
    expect(media.json).toMatchObject({
      allowed: false,
      boundary: 'tool',
      reason: expect.stringContaining(
        'tool read_media_file is denied by agents[agent-2].tools.deny: read_media_file',
      ),
    });
    expect((await ask('agent-1', 'read_media_file')).json).toMatchObject({ allowed: true });
    // Another server's tools are held to the patterns that do not name a server.
    const other = await postAsAgent(events, 'agent-1', { kind: 'tool', target: 'mcp__web__fetch' });
    expect(other.json).toMatchObject({ allowed: false, reason: expect.stringContaining('fetch') });
    expect(refusedTools(g).map((r) => `${r.session} ${r.source} ${r.target}`)).toEqual([
      'agent-2 ingest read_media_file',
      'agent-1 ingest mcp__web__fetch',
    ]);
  });
});

describe.each([{ json: true }, { json: false }])('SDK server, json: $json', ({ json }) => {
  it('filters its list, and refuses what it left out', async () => {
    const srv = await startMcpTools({ json });
    const g = await start(srv.url, {
      // Unmapped tools go freely: only the policy stops a call.
      bridge: {
        upstream: srv.url,
        unmapped: 'allow',
        tools: { allow: ['ok', 'f*'], deny: ['bridge:throws'] },
      },
      agents: [
        { id: 'agent-1', token: agentToken('agent-1'), tools: { allow: ['throws'] } },
        { id: 'agent-2', token: agentToken('agent-2'), tools: { deny: ['fails'] } },
      ],
      roles: {},
    });
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    const a2 = await mcp.connect(g, agentToken('agent-2'));
    expect(names(await a1.listTools())).toEqual(['fails', 'ok']);
    expect(names(await a2.listTools())).toEqual(['ok']);
    const err = await refused(a1.callTool({ name: 'throws', arguments: {} }));
    expect(err.message).toContain('tool throws is denied by bridge.tools.deny: bridge:throws');
    expect(await a2.callTool({ name: 'ok', arguments: {} })).toMatchObject({
      content: [{ type: 'text', text: 'done' }],
    });
  });
});

describe('reload', () => {
  it('a changed list applies from the next tools/list and call, without a restart', async () => {
    const srv = await startMcpTools({ json: true });
    const ADMIN = 'admin-token-for-tools-0123456789';
    const config = (deny: string[]) => ({
      workspace: ws,
      agents: [{ id: 'agent-1', token: agentToken('agent-1') }],
      bridge: { upstream: srv.url, unmapped: 'allow', tools: { deny } },
    });
    const g = await fileGateway(ADMIN, config([]));
    const a1 = mcp.keep(
      await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, agentToken('agent-1')),
    );
    expect(names(await a1.listTools())).toContain('ok');
    g.write(config(['ok']));
    const res = await adminClient(g.gw.admin.port, ADMIN).post('/api/reload', {});
    expect(res.json).toMatchObject({ reloaded: true, restartNeeded: [] });
    expect(names(await a1.listTools())).not.toContain('ok');
    const err = await refused(a1.callTool({ name: 'ok', arguments: {} }));
    expect(err.message).toContain('tool ok is denied by bridge.tools.deny: ok');
  });
});
