import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { AGENT_TOKEN, bridgeGateway } from '../helpers/gateway.js';
import { mcpClient, refused } from '../helpers/mcp.js';
import { startMcpTools } from '../helpers/mcp-tools.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * Tools of kind `command` name their command line (`bridge.tools`'s and
 * `bridge.routes`' `command:`): an MCP call through the official SDK client and plain HTTP
 * tool calls journal it, redacted; an argv is shown shell-quoted; a value that is no command
 * line is refused naming the argument, before the tool server sees it.
 */
const SECRET = 'hunter2-bridge-0123456789';
const ws = tempDir();
const isEvent = (r: JournalRecord): r is EventRecord => r.type === 'event';

describe('MCP tools mapped with command:', async () => {
  const tools = await startMcpTools({ json: true });
  const g = await bridgeGateway(ws, tools.url, {
    tools: { ok: { kind: 'command', target: 'cwd', command: 'argv' } },
  });
  const client = await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, AGENT_TOKEN);

  it('an argv is journaled shell-quoted, its secrets redacted', async () => {
    const argv = ['curl', '-H', `Authorization: Bearer ${SECRET}`, 'https://api.example.com/x y'];
    const answer = await client.callTool({ name: 'ok', arguments: { cwd: ws, argv } });
    expect(answer.content).toEqual([{ type: 'text', text: 'done' }]);
    const event = g.records().filter(isEvent).at(-1);
    expect(event).toMatchObject({
      kind: 'command',
      target: ws,
      source: 'bridge',
      verdict: 'ALLOW',
      command: `curl -H 'Authorization: [redacted]' 'https://api.example.com/x y'`,
    });
  });

  it('an argument that is no command line is refused, naming it', async () => {
    const before = g.records().filter(isEvent).length;
    const e = await refused(client.callTool({ name: 'ok', arguments: { cwd: ws, argv: 5 } }));
    // A 400 with the JSON-RPC error the SDK quotes: the argument named.
    expect(e.message).toMatch(/tool ok: argument \\?"argv\\?" must be a command line/);
    expect(g.records().filter(isEvent)).toHaveLength(before);
    expect(JSON.stringify(g.records())).not.toContain(SECRET);
  });
});

describe('HTTP tool routes with command:', async () => {
  const tools = await startUpstream();
  const g = await bridgeGateway(ws, tools.url, {
    protocol: 'http',
    routes: [
      { method: 'POST', path: '/run', kind: 'command', target: '$.cwd', command: '$.cmd' },
      { method: 'POST', path: '/exec', kind: 'command', target: 'query:cwd', command: 'query:sh' },
    ],
  });
  const call = async (path: string, body: unknown) => {
    const res = await request(`http://127.0.0.1:${g.gw.bridge.port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, text: await res.body.text() };
  };

  it('a JSON body field and a query parameter give the command line, redacted', async () => {
    expect((await call('/run', { cwd: ws, cmd: `TOKEN=${SECRET} make deploy` })).status).toBe(200);
    const sh = encodeURIComponent(`mysql --password=${SECRET} -e 'select 1'`);
    expect((await call(`/exec?cwd=${encodeURIComponent(ws)}&sh=${sh}`, {})).status).toBe(200);
    const commands = g
      .records()
      .filter(isEvent)
      .map((e) => e.command);
    expect(commands).toEqual([
      'TOKEN=[redacted] make deploy',
      "mysql --password=[redacted] -e 'select 1'",
    ]);
    expect(JSON.stringify(g.records())).not.toContain(SECRET);
  });

  it('a command line servers could read two ways, or no string, is refused 400', async () => {
    const seen = tools.seen.length;
    const twice = await call(`/exec?cwd=${encodeURIComponent(ws)}&sh=ls&sh=rm`, {});
    expect(twice.status).toBe(400);
    expect(twice.text).toMatch(/query parameter "sh" is repeated/);
    const object = await call('/run', { cwd: ws, cmd: { run: 'ls' } });
    expect(object.status).toBe(400);
    expect(object.text).toMatch(/argument "cmd" must be a command line/);
    expect(tools.seen.length).toBe(seen);
  });
});
