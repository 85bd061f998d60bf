import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startMcpEcho } from '../helpers/mcp.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The MCP adapter's transport rules against a recording JSON-RPC upstream: the 2026-07-28
 * standard headers (Mcp-Method / Mcp-Name must match the body), messages other than tools/call
 * passed byte for byte, and the agent's Authorization kept from the upstream unless
 * bridge.forwardAuthorization says otherwise.
 */
const echo = await startMcpEcho();
const ws = tempDir();
const TOKEN = 'agent-1-token-0123456789abcdef';
let g: TestGateway;
let forwarding: TestGateway;

const config = (bridge: Record<string, unknown> = {}) => ({
  workspace: ws,
  agents: [{ id: 'agent-1', token: TOKEN }],
  policy: { pause: 'block' },
  bridge: { upstream: echo.url, ...bridge },
});
beforeAll(async () => {
  g = await startTestGateway(config(), { dir: tempDir() });
  forwarding = await startTestGateway(config({ forwardAuthorization: true }), { dir: tempDir() });
});
afterAll(async () => {
  await g.stop();
  await forwarding.stop();
});

async function post(gw: TestGateway, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(`http://127.0.0.1:${gw.gw.bridge.port}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: JSON.parse(text) as Record<string, any> };
}

const call = (name: string, path = join(ws, 'a.txt')) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name, arguments: { path } },
});
const b64 = (s: string) => `=?base64?${Buffer.from(s).toString('base64')}?=`;

describe('Mcp-Method / Mcp-Name / MCP-Protocol-Version', () => {
  const rejected: { name: string; headers: Record<string, string>; says: RegExp }[] = [
    {
      name: 'Mcp-Method that names another method',
      headers: { 'mcp-method': 'tools/list' },
      says: /Mcp-Method header \(tools\/list\) does not match the body's method \(tools\/call\)/,
    },
    {
      name: 'Mcp-Name that names another tool',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': 'write_file' },
      says: /Mcp-Name header \(write_file\) does not match the body \(read_text_file\)/,
    },
    {
      name: 'Mcp-Name sentinel that decodes to another tool',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': b64('write_file') },
      says: /Mcp-Name header \(write_file\) does not match/,
    },
    {
      name: 'protocol 2026-07-28 without Mcp-Method',
      headers: { 'mcp-protocol-version': '2026-07-28' },
      says: /Mcp-Method header is required from protocol 2026-07-28/,
    },
  ];
  it.each(rejected)('$name → 400 JSON-RPC error, nothing upstream, journaled', async (c) => {
    const before = echo.seen.length;
    const res = await post(g, call('read_text_file'), c.headers);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
    expect(res.json.error.message).toMatch(c.says);
    expect(echo.seen.length).toBe(before);
    const last = g.records().at(-1);
    expect(last).toMatchObject({ type: 'refusal', source: 'bridge', status: 400 });
  });

  const accepted: { name: string; headers: Record<string, string> }[] = [
    {
      name: 'matching plain headers',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': 'read_text_file' },
    },
    {
      name: 'matching base64 sentinel',
      headers: { 'mcp-method': 'tools/call', 'mcp-name': b64('read_text_file') },
    },
    {
      name: 'protocol 2026-07-28 with Mcp-Method',
      headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
    },
    { name: 'no standard headers (2025-11-25)', headers: { 'mcp-protocol-version': '2025-11-25' } },
  ];
  it.each(accepted)('$name → judged and forwarded', async (c) => {
    const before = echo.seen.length;
    const res = await post(g, call('read_text_file'), c.headers);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ jsonrpc: '2.0', id: 7, result: { echo: 'tools/call' } });
    expect(echo.seen.length).toBe(before + 1);
    expect(echo.seen.at(-1)?.body).toEqual(call('read_text_file'));
  });

  it('a sentinel on a refused call still gets the policy refusal, not a header error', async () => {
    const before = echo.seen.length;
    const res = await post(g, call('write_file', '/etc/cron.d/x'), {
      'mcp-method': 'tools/call',
      'mcp-name': b64('write_file'),
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: 7, error: { code: -32001, data: { verdict: 'PAUSE' } } });
    expect(echo.seen.length).toBe(before);
    g.gw.sessions.resume('agent-1', { reset: true });
  });
});

describe('messages other than tools/call, and the Authorization header', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: { roots: {} },
      clientInfo: { name: 'x', version: '1' },
    },
  };

  it('initialize, tools/list and a notification pass (re-serialised) and make no events', async () => {
    const before = echo.seen.length;
    const eventsBefore = g.records().filter((r) => r.type === 'event').length;
    const raw = JSON.stringify(initialize, null, 2); // sent as trajgate's serialisation
    const a = await post(g, raw);
    const b = await post(g, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const n = await request(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await n.body.dump();
    expect([a.status, b.status, n.statusCode]).toEqual([200, 200, 202]);
    expect(a.json.result).toEqual({ echo: 'initialize' });
    expect(b.json.result).toEqual({ echo: 'tools/list', tools: [] });
    expect(echo.seen.slice(before).map((s) => (s.body as { method: string }).method)).toEqual([
      'initialize',
      'tools/list',
      'notifications/initialized',
    ]);
    const canonical = JSON.stringify(initialize);
    expect(echo.seen[before]?.headers['content-length']).toBe(String(Buffer.byteLength(canonical)));
    expect(g.records().filter((r) => r.type === 'event').length).toBe(eventsBefore);
  });

  it('the agent’s bearer token is not forwarded upstream', async () => {
    await post(g, initialize);
    expect(echo.seen.at(-1)?.body).toEqual(initialize);
    expect(echo.seen.at(-1)?.headers.authorization).toBeUndefined();
  });

  it('with bridge.forwardAuthorization: true it is', async () => {
    await post(forwarding, initialize);
    expect(echo.seen.at(-1)?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });
});
