import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { mcpClient, refused } from '../helpers/mcp.js';
import { BIG_FAIL_BYTES, startMcpTools } from '../helpers/mcp-tools.js';
import { tempDir } from '../helpers/tmp.js';
import { outcomeOf, waitForRecords } from '../helpers/wait.js';

/**
 * A tool call whose answer is a failure comes back as a failed outcome: a JSON-RPC error or
 * `isError: true` from a real MCP server (the official SDK, answering in JSON and in a
 * Server-Sent Events stream after a notification), a tool server's status ≥ 400, an upstream
 * that cannot be reached. A refusal by trajgate itself is not a failure. The answers pass
 * through unchanged.
 */
const ws = tempDir();
const token = (id: string) => `${id}-token-0123456789abcdef`;

async function gateway(upstream: string, bridge: Record<string, unknown> = {}) {
  const g = await startTestGateway(
    {
      workspace: ws,
      agents: ['agent-1', 'agent-2'].map((id) => ({ id, token: token(id) })),
      policy: { pause: 'block' },
      bridge: { upstream, unmapped: 'allow', ...bridge },
    },
    { dir: tempDir() },
  );
  afterAll(() => g.stop());
  return g;
}

/** A port nothing listens on: one the system gave and took back. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The outcome of the latest event with `target` in `g`'s journal, once written. */
async function outcome(g: TestGateway, target: string): Promise<OutcomeRecord> {
  const event = g
    .records()
    .filter((r): r is EventRecord => r.type === 'event' && r.target === target)
    .at(-1);
  expect(event, `an event for ${target}`).toBeDefined();
  const records = await waitForRecords(g, outcomeOf(event?.seq));
  return records.find(outcomeOf(event?.seq)) as OutcomeRecord;
}

/** A tools/call POSTed by hand (no session: the test server is stateless). */
async function rawCall(url: string, tool: string, auth = true) {
  const res = await request(url, {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...(auth ? { authorization: `Bearer ${token('agent-1')}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: tool, arguments: {} },
    }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, type: res.headers['content-type'], body };
}

const MAPPED = { tools: { 'write-out': { kind: 'write', target: 'path' } } };
const jsonTools = await startMcpTools({ json: true });
const sseTools = await startMcpTools({ json: false });
const jsonGateway = await gateway(jsonTools.url, MAPPED);
const sseGateway = await gateway(sseTools.url, MAPPED);
const mcpUnreachable = await gateway(`http://127.0.0.1:${await closedPort()}/mcp`);
const httpUnreachable = await gateway(`http://127.0.0.1:${await closedPort()}`, {
  protocol: 'http',
});

const httpTools = createServer((req, res) => {
  req.resume();
  const status = req.url === '/fail' ? 500 : req.url === '/missing' ? 404 : 200;
  res.writeHead(status, { 'content-type': 'text/plain' }).end(`status ${status}`);
});
await new Promise<void>((r) => httpTools.listen(0, '127.0.0.1', r));
afterAll(() => {
  httpTools.closeAllConnections();
  return new Promise<void>((r) => httpTools.close(() => r()));
});
const httpGateway = await gateway(`http://127.0.0.1:${(httpTools.address() as AddressInfo).port}`, {
  protocol: 'http',
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]?.text ?? '';

describe.each([
  ['application/json', jsonTools, jsonGateway],
  ['text/event-stream', sseTools, sseGateway],
])('MCP tools/call answered in %s', (type, tools, g) => {
  const connect = async (id = 'agent-1') => {
    const client = await mcpClient(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, token(id));
    clients.push(client);
    return client;
  };

  it('a result is not a failure', async () => {
    const client = await connect();
    expect(text(await client.callTool({ name: 'ok', arguments: {} }))).toBe('done');
    const o = await outcome(g, 'ok');
    expect(o).toMatchObject({ status: 200 });
    expect(o.failed).toBeUndefined();
  });

  it('isError: true reaches the client as sent, and the outcome is failed', async () => {
    const client = await connect();
    const r = await client.callTool({ name: 'fails', arguments: {} });
    expect(r).toMatchObject({ isError: true, content: [{ text: 'tests failed: 3 of 12' }] });
    expect(await outcome(g, 'fails')).toMatchObject({ status: 200, failed: true });
  });

  it('a JSON-RPC error (the tool threw) reaches the client, and the outcome is failed', async () => {
    const client = await connect();
    const err = await refused(client.callTool({ name: 'throws', arguments: {} }));
    expect(err.code).toBe(-32603);
    expect(err.message).toContain('the tool crashed');
    expect(await outcome(g, 'throws')).toMatchObject({ status: 200, failed: true });
  });

  it('a megabyte of failing output: read as it passes, every byte as the server sent it', async () => {
    const direct = await rawCall(tools.url, 'big-fail', false);
    const bridged = await rawCall(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, 'big-fail');
    expect(bridged.type).toBe(direct.type);
    expect(bridged.type).toContain(type);
    expect(bridged.body.length).toBeGreaterThan(BIG_FAIL_BYTES);
    expect(bridged.body.equals(direct.body)).toBe(true);
    const o = await outcome(g, 'big-fail');
    expect(o).toMatchObject({ status: 200, failed: true, bytesDown: direct.body.length });
  });

  it('a refusal by trajgate is not a failure', async () => {
    const client = await connect('agent-2');
    const err = await refused(
      client.callTool({ name: 'write-out', arguments: { path: '/etc/trajgate-test' } }),
    );
    expect(err.code).toBe(-32001);
    const o = await outcome(g, '/etc/trajgate-test');
    expect(o.error).toBeDefined();
    expect(o.failed).toBeUndefined();
  });
});

describe('SSE: the answer streams while it is watched', () => {
  it('a notification reaches the client before the failing response is even written', async () => {
    const client = await mcpClient(
      `http://127.0.0.1:${sseGateway.gw.bridge.port}/mcp`,
      token('agent-1'),
    );
    clients.push(client);
    // The server answers only once the client has had the notification it sent first.
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      if (n.params.data === 'running held-fail') sseTools.release();
    });
    const r = await client.callTool({ name: 'held-fail', arguments: {} });
    expect(r).toMatchObject({ isError: true, content: [{ text: 'failed late' }] });
    expect(await outcome(sseGateway, 'held-fail')).toMatchObject({ status: 200, failed: true });
  });
});

describe('an upstream that cannot be reached', () => {
  it('MCP: the 502 trajgate answers is a failed call', async () => {
    const g = mcpUnreachable;
    const r = await rawCall(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, 'ok');
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body.toString())).toMatchObject({ id: 9, error: { code: -32002 } });
    expect(await outcome(g, 'ok')).toMatchObject({ status: 502, failed: true });
  });

  it('HTTP adapter: the 502 is a failed call', async () => {
    const g = httpUnreachable;
    const r = await httpCall(g, 'POST', '/run');
    expect(r.status).toBe(502);
    expect(await outcome(g, 'POST /run')).toMatchObject({ status: 502, failed: true });
  });
});

async function httpCall(g: TestGateway, method: string, path: string) {
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}${path}`, {
    method: method as 'POST',
    headers: { authorization: `Bearer ${token('agent-1')}`, 'content-type': 'application/json' },
    body: '{}',
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  return { status: res.statusCode, body: await res.body.text() };
}

describe('HTTP tool adapter: a status ≥ 400 from the tool server is a failed call', () => {
  const g = httpGateway;
  it.each([
    ['/fail', 500, true],
    ['/missing', 404, true],
    ['/run', 200, false],
  ])('POST %s answered %i', async (path, status, failed) => {
    const r = await httpCall(g, 'POST', path);
    expect(r).toEqual({ status, body: `status ${status}` });
    const o = await outcome(g, `POST ${path}`);
    expect(o.status).toBe(status);
    expect(o.failed).toBe(failed ? true : undefined);
  });
});
