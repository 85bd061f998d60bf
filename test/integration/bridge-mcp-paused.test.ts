import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { mcpPerTest, rawMcpSession, refused, startSupergateway } from '../helpers/mcp.js';
import { startMcpResources } from '../helpers/mcp-resources.js';
import { pauseByIngest } from '../helpers/pause.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A paused session runs nothing on the tool server: every MCP message is held like any request
 * (policy.pause: hold) or refused (block), protocol methods, calls that name no path, server
 * streams, session ends and notifications included; a resume lets them go, a deny or the hold
 * timeout refuses them. Against the SDK server with resources and prompts, and the real
 * server-filesystem.
 */
const ws = tempDir();
writeFileSync(join(ws, 'notes.txt'), 'notes inside');
const srv = await startMcpResources();
const sg = await startSupergateway([ws]);

const mcp = mcpPerTest();
const start = (upstream: string, policy: Record<string, unknown> = {}) =>
  mcp.start({
    workspace: ws,
    agents: [{ id: 'agent-1', token: agentToken('agent-1') }],
    policy: { pause: 'hold', holdTimeout: '10s', ...policy },
    bridge: { upstream, unmapped: 'allow' },
  });
const bridgeUrl = (g: TestGateway) => `http://127.0.0.1:${g.gw.bridge.port}/mcp`;
const connect = (g: TestGateway) => mcp.connect(g, agentToken('agent-1'));

const pause = (g: TestGateway) => pauseByIngest(g);

const heldRecords = (g: TestGateway) =>
  g
    .records()
    .filter((r): r is JournalRecord & { kind: string; target: string } => r.type === 'event')
    .filter((r) => (r as { held?: boolean }).held === true)
    .map((r) => `${r.kind} ${r.target}`);

/** Requests of the resources server by HTTP method (the SDK client's GET opens on its own). */
const count = (method: string) => srv.seen.filter((s) => s.method === method).length;

describe('while paused every MCP message is held', () => {
  it('protocol methods, reads and prompts wait; a resume lets each through', async () => {
    const g = await start(srv.url);
    const a1 = await connect(g);
    await pause(g);
    const posts = count('POST');
    const asked = [
      a1.listResources(),
      a1.listPrompts(),
      a1.ping(),
      a1.readResource({ uri: `file://${ws}/notes.txt` }),
      a1.getPrompt({ name: 'review', arguments: { file: 'a' } }),
    ];
    // prompts/get may change what later calls reach: it waits its turn behind the held read.
    await waitFor(() => g.gw.sessions.held('agent-1').length === asked.length - 1);
    expect(count('POST')).toBe(posts);
    expect(heldRecords(g).sort()).toEqual(
      ['tool resources/list', 'tool prompts/list', 'tool ping', `read ${ws}/notes.txt`].sort(),
    );
    g.gw.sessions.resume('agent-1');
    const [resources, prompts, ping, read, prompt] = await Promise.all(asked);
    expect(resources).toHaveProperty('resources');
    expect(prompts).toHaveProperty('prompts');
    expect(ping).toEqual({});
    expect((read as { contents: { text: string }[] }).contents[0]?.text).toBe('notes inside');
    expect(prompt).toHaveProperty('messages');
    expect(count('POST')).toBe(posts + asked.length);
  });

  it('GET (server stream) and DELETE wait; a deny refuses them 403, nothing reaches the server', async () => {
    const g = await start(srv.url);
    const s = await rawMcpSession(bridgeUrl(g), {
      authorization: `Bearer ${agentToken('agent-1')}`,
    });
    await pause(g);
    const [gets, deletes] = [count('GET'), count('DELETE')];
    const asked = (['GET', 'DELETE'] as const).map((method) =>
      request(bridgeUrl(g), {
        method,
        headers: {
          authorization: `Bearer ${agentToken('agent-1')}`,
          accept: 'text/event-stream',
          'mcp-session-id': s.id,
        },
      }).then(async (r) => ({
        status: r.statusCode,
        headers: r.headers,
        json: (await r.body.json()) as any,
      })),
    );
    await waitFor(() => g.gw.sessions.held('agent-1').length === 2);
    expect(heldRecords(g).sort()).toEqual(['tool DELETE session', 'tool GET server stream']);
    g.gw.sessions.deny('agent-1');
    for (const res of await Promise.all(asked)) {
      expect(res.status).toBe(403);
      expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=workspace');
      expect(res.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
      expect(res.json.error.message).toMatch(/denied it/);
    }
    expect([count('GET'), count('DELETE')]).toEqual([gets, deletes]);
    expect(srv.sessions()).toContain(s.id.split('.')[0]);
  });

  it('a notification waits too; at the hold timeout it is refused with 403', async () => {
    const g = await start(srv.url, { holdTimeout: '1s' });
    const s = await rawMcpSession(bridgeUrl(g), {
      authorization: `Bearer ${agentToken('agent-1')}`,
    });
    await pause(g);
    const posts = count('POST');
    const note = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } };
    const res = await s.send(JSON.stringify(note));
    expect(res.status).toBe(403);
    expect(res.messages[0]?.error.message).toMatch(/No operator decided within the hold time/);
    expect(count('POST')).toBe(posts);
    expect(heldRecords(g)).toEqual(['tool notifications/cancelled']);
  });

  it('with policy.pause: block each is refused at once', async () => {
    const g = await start(srv.url, { pause: 'block' });
    const a1 = await connect(g);
    await pause(g);
    const posts = count('POST');
    const err = await refused(a1.listResources());
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/paused this session: resources\/list was not sent/);
    expect(count('POST')).toBe(posts);
  });
});

describe('server-filesystem: calls that name no path are held while paused', () => {
  it('tools/list, list_allowed_directories, read_multiple_files {paths: []} wait for the resume', async () => {
    const g = await start(sg.url);
    const a1 = await connect(g);
    await pause(g);
    const asked = [
      a1.listTools(),
      a1.callTool({ name: 'list_allowed_directories', arguments: {} }),
      a1.callTool({ name: 'read_multiple_files', arguments: { paths: [] } }),
    ];
    const settled: unknown[] = [];
    for (const a of asked) void a.then((r) => settled.push(r));
    await waitFor(() => g.gw.sessions.held('agent-1').length === 3);
    expect(settled).toEqual([]);
    expect(heldRecords(g).sort()).toEqual([
      'tool tools/call list_allowed_directories',
      'tool tools/call read_multiple_files',
      'tool tools/list',
    ]);
    g.gw.sessions.resume('agent-1');
    const [tools, dirs] = (await Promise.all(asked)) as unknown as [
      { tools: { name: string }[] },
      { content: { text: string }[] },
    ];
    expect(tools.tools.map((t) => t.name)).toContain('write_file');
    expect(dirs.content[0]?.text).toBe(`Allowed directories:\n${ws}`);
  });

  it('denied, they are refused for the model and the server answers none', async () => {
    const g = await start(sg.url);
    const a1 = await connect(g);
    await pause(g);
    const asked = [
      refused(a1.listTools()),
      refused(a1.callTool({ name: 'list_allowed_directories', arguments: {} })),
    ];
    await waitFor(() => g.gw.sessions.held('agent-1').length === 2);
    g.gw.sessions.deny('agent-1');
    for (const err of await Promise.all(asked)) {
      expect(err.code).toBe(-32001);
      expect(err.message).toMatch(/denied it/);
    }
  });
});
