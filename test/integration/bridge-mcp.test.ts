import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { mcpClient, mcpPerTest, refused, startSupergateway } from '../helpers/mcp.js';
import { layout, tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * End to end with real third-party parts: the official server-filesystem (stdio) behind
 * supergateway (streamable HTTP), allowed on BOTH the workspace and `outside`, so trajgate's
 * bridge is the only thing between the agent and `outside`; the official SDK client drives it.
 */
const root = tempDir();
const ws = join(root, 'ws');
const outside = join(root, 'outside');
layout(root, ['ws', 'outside'], { 'ws/link': '../outside' });
const sg = await startSupergateway([ws, outside]);
const allowed = await startUpstream();
const AGENTS = ['agent-1', 'agent-2', 'agent-3', 'agent-4'];
const token = (id: string) => `${id}-token-0123456789abcdef`;

const mcp = mcpPerTest();
const start = (policy: Record<string, unknown>, bridge: Record<string, unknown> = {}) =>
  mcp.start({
    workspace: ws,
    agents: AGENTS.map((id) => ({ id, token: token(id) })),
    policy,
    network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
    bridge: { upstream: sg.url, ...bridge },
  });
const connect = (g: TestGateway, id: string) => mcp.connect(g, token(id));

function events(g: TestGateway, session?: string): EventRecord[] {
  return g
    .records()
    .filter((r): r is EventRecord => r.type === 'event')
    .filter((r) => session === undefined || r.session === session);
}

const text = (r: unknown) =>
  ((r as { content: { type: string; text: string }[] }).content[0] as { text: string }).text;

describe('MCP bridge end to end (server-filesystem behind supergateway)', () => {
  it('control: without trajgate the server itself writes outside the workspace', async () => {
    const direct = mcp.keep(await mcpClient(sg.url, 'unused-by-supergateway'));
    await direct.callTool({
      name: 'write_file',
      arguments: { path: join(outside, 'control.txt'), content: 'x' },
    });
    expect(readFileSync(join(outside, 'control.txt'), 'utf8')).toBe('x');
  });

  it('write_file inside succeeds; outside, via a symlink and via .. each pause at once', async () => {
    const g = await start({ pause: 'block' });
    const a1 = await connect(g, 'agent-1');
    const ok = await a1.callTool({
      name: 'write_file',
      arguments: { path: join(ws, 'inside.txt'), content: 'hello' },
    });
    expect(text(ok)).toMatch(/Successfully wrote/);
    expect(readFileSync(join(ws, 'inside.txt'), 'utf8')).toBe('hello');

    const cases = [
      { id: 'agent-2', path: join(outside, 'a.txt'), lands: join(outside, 'a.txt') },
      { id: 'agent-3', path: join(ws, 'link', 'b.txt'), lands: join(outside, 'b.txt') },
      { id: 'agent-4', path: `${ws}/../outside/c.txt`, lands: join(outside, 'c.txt') },
    ];
    for (const c of cases) {
      const client = await connect(g, c.id);
      const t0 = Date.now();
      const err = await refused(
        client.callTool({ name: 'write_file', arguments: { path: c.path, content: 'bad' } }),
      );
      expect(Date.now() - t0, c.id).toBeLessThan(2_000);
      expect(err.code, c.id).toBe(-32001);
      expect(err.message, c.id).toMatch(/paused this session/);
      expect(err.message, c.id).toContain(`Reason: write outside the workspace ${ws}`);
      expect(existsSync(c.lands), c.id).toBe(false);
      expect(g.gw.sessions.isPaused(c.id), c.id).toBe(true);
      expect(events(g, c.id), c.id).toEqual([
        expect.objectContaining({
          source: 'bridge',
          kind: 'write',
          target: c.path,
          verdict: 'PAUSE',
          boundary: 'workspace',
        }),
      ]);
    }
    expect(g.gw.sessions.isPaused('agent-1')).toBe(false);
  });

  it('one trajectory: after a bridge pause the same agent’s proxy request is held, then refused', async () => {
    const g = await start({ holdTimeout: '1s' });
    const auth = ['-U', `agent-1:${token('agent-1')}`, '-x', g.proxyUrl];
    const before = await curl([...auth, `${allowed.url}/before`]);
    expect(before.status).toBe(200);

    const a1 = await connect(g, 'agent-1');
    const err = await refused(
      a1.callTool({
        name: 'write_file',
        arguments: { path: join(outside, 'held.txt'), content: 'bad' },
      }),
    );
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/paused this session/);
    expect(existsSync(join(outside, 'held.txt'))).toBe(false);

    const later = curl([...auth, `${allowed.url}/after`]);
    await waitFor(() => g.gw.sessions.held('agent-1').length === 1);
    const res = await later;
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=workspace');
    expect(allowed.seen.map((r) => r.url)).not.toContain('/after');

    const mine = events(g, 'agent-1');
    expect(mine.map((e) => [e.source, e.verdict])).toEqual([
      ['proxy', 'ALLOW'],
      ['bridge', 'PAUSE'],
      ['proxy', 'PAUSE'],
    ]);
    expect(mine[2]).toMatchObject({ held: true, kind: 'network' });
  });

  it('read_text_file inside is allowed; move_file inside → outside is refused, both journaled', async () => {
    writeFileSync(join(ws, 'r.txt'), 'read me');
    writeFileSync(join(ws, 'm.txt'), 'move me');
    const g = await start({ pause: 'block' });
    const a1 = await connect(g, 'agent-1');
    const read = await a1.callTool({
      name: 'read_text_file',
      arguments: { path: join(ws, 'r.txt') },
    });
    expect(text(read)).toBe('read me');

    const source = join(ws, 'm.txt');
    const destination = join(outside, 'm.txt');
    const err = await refused(
      a1.callTool({ name: 'move_file', arguments: { source, destination } }),
    );
    expect(err.code).toBe(-32001);
    expect(existsSync(source)).toBe(true);
    expect(existsSync(destination)).toBe(false);
    expect(events(g, 'agent-1').map((e) => [e.kind, e.target, e.verdict])).toEqual([
      ['read', join(ws, 'r.txt'), 'ALLOW'],
      ['read', source, 'ALLOW'],
      ['write', source, 'ALLOW'],
      ['write', destination, 'PAUSE'],
    ]);
  });

  it('roots outside the workspace are removed before the server sees them (journaled)', async () => {
    const g = await start({ pause: 'block' });
    mkdirSync(join(ws, 'sub'), { recursive: true });
    const listed = ['file:///', `file://${outside}`, `file://${ws}/sub`];
    const a1 = await mcp.connect(g, token('agent-1'), { roots: listed });
    // The server asks for roots over the standalone SSE stream (through the bridge) and
    // replaces its allowed directories with them; its first ask may race the stream's opening,
    // so nudge it with list_changed until it has adopted them.
    const adopted = `Allowed directories:\n${ws}/sub`;
    const until = Date.now() + 10_000;
    let dirs = '';
    while (dirs !== adopted && Date.now() < until) {
      await a1.sendRootsListChanged();
      await new Promise((r) => setTimeout(r, 100));
      dirs = text(await a1.callTool({ name: 'list_allowed_directories', arguments: {} }));
    }
    expect(dirs).toBe(adopted);
    const roots = g.records().filter((r) => r.type === 'roots');
    expect(roots.length).toBeGreaterThan(0);
    for (const r of roots) {
      expect(r).toMatchObject({
        session: 'agent-1',
        removed: ['file:///', `file://${outside}`],
        kept: [`file://${ws}/sub`],
      });
    }
    expect(events(g)).toEqual([]); // list_allowed_directories makes no events
  });

  it('initialize and tools/list pass and make no events', async () => {
    const g = await start({ pause: 'block' });
    const a1 = await connect(g, 'agent-1');
    const names = (await a1.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['write_file', 'move_file', 'read_text_file']));
    expect(a1.getServerCapabilities()?.tools).toBeDefined();
    expect(events(g)).toEqual([]);
  });

  it('an unmapped tool is refused as REVIEW by default, answered by trajgate', async () => {
    const g = await start({ pause: 'block' });
    const a1 = await connect(g, 'agent-1');
    const err = await refused(
      a1.callTool({ name: 'format_disk', arguments: { disk: '/dev/sda' } }),
    );
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/refused this request: tools\/call format_disk/);
    expect(events(g, 'agent-1')).toEqual([
      expect.objectContaining({ kind: 'tool', target: 'format_disk', verdict: 'REVIEW' }),
    ]);
    expect(g.gw.sessions.isPaused('agent-1')).toBe(false);
  });

  it('with bridge.unmapped: allow an unknown tool is forwarded and the server answers', async () => {
    const g = await start({ pause: 'block' }, { unmapped: 'allow' });
    const a1 = await connect(g, 'agent-1');
    const outcome = await a1.callTool({ name: 'format_disk', arguments: {} }).then(
      (r) => ({ isError: r.isError === true, text: text(r), code: 0 }),
      (e: { code: number; message: string }) => ({ isError: true, text: e.message, code: e.code }),
    );
    // The server's own answer: an error naming the tool, not trajgate's -32001.
    expect(outcome.isError).toBe(true);
    expect(outcome.code).not.toBe(-32001);
    expect(outcome.text).toMatch(/format_disk/);
    expect(outcome.text).not.toMatch(/trajgate/);
    expect(events(g, 'agent-1')).toEqual([
      expect.objectContaining({ kind: 'tool', target: 'format_disk', verdict: 'ALLOW' }),
    ]);
  });
});
