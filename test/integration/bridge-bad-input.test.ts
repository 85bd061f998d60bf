import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startMcpEcho } from '../helpers/mcp.js';
import { refusingPort } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { outcomeOf, waitForRecords } from '../helpers/wait.js';

/**
 * Malformed and unauthenticated requests to the MCP bridge, raw over HTTP, with a recording
 * upstream: each gets a clear status and JSON-RPC error, is journaled, reaches nothing, and
 * the bridge keeps serving.
 */
const echo = await startMcpEcho();
const ws = tempDir();
const TOKEN = 'agent-1-token-0123456789abcdef';
let g: TestGateway;
let down: TestGateway;
const base = (upstream: string) => ({
  workspace: ws,
  agents: [{ id: 'agent-1', token: TOKEN }],
  policy: { pause: 'block' },
  bridge: { upstream, maxBodyBytes: 2048 },
});
beforeAll(async () => {
  g = await startTestGateway(base(echo.url), { dir: tempDir() });
  down = await startTestGateway(base(`http://127.0.0.1:${await refusingPort()}/mcp`), {
    dir: tempDir(),
  });
});
afterAll(async () => {
  await g.stop();
  await down.stop();
});

const AUTH = { authorization: `Bearer ${TOKEN}` };
async function post(
  gw: TestGateway,
  body: string | Readable,
  headers: Record<string, string> = AUTH,
) {
  const res = await request(`http://127.0.0.1:${gw.gw.bridge.port}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, json: JSON.parse(text) as any };
}

const rpc = (method: string, params?: unknown, id: number | string = 9) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
const big = 'x'.repeat(3_000);
async function* chunked(): AsyncIterable<Buffer> {
  yield Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"');
  for (let i = 0; i < 4; i++) yield Buffer.from('x'.repeat(1_000));
  yield Buffer.from('"}}');
}

interface Case {
  name: string;
  body: string;
  status: number;
  code: number;
  says: RegExp;
  id?: number | string | null;
  headers?: Record<string, string>;
}
const call = (params: unknown) => rpc('tools/call', params);
const basic = `Basic ${Buffer.from(`agent-1:${TOKEN}`).toString('base64')}`;
// prettier-ignore
const cases: Case[] = [
  { name: 'invalid JSON', body: '{"jsonrpc":"2.0",', status: 400, code: -32700, id: null, says: /not valid JSON/ },
  { name: 'not a JSON-RPC object', body: '"tools/call"', status: 400, code: -32600, id: null, says: /JSON-RPC 2.0 message/ },
  { name: 'a JSON-RPC batch', body: `[${rpc('tools/list')}]`, status: 400, code: -32600, id: null, says: /batches are not accepted/ },
  { name: 'a body over maxBodyBytes', body: rpc('tools/list', { pad: big }), status: 413, code: -32600, says: /larger than 2048 bytes/ },
  { name: 'tools/call without params', body: rpc('tools/call'), status: 400, code: -32602, id: 9, says: /needs params/ },
  { name: 'tools/call without name', body: call({ arguments: {} }), status: 400, code: -32602, id: 9, says: /string "name"/ },
  { name: 'tools/call with a numeric name', body: call({ name: 7 }), status: 400, code: -32602, id: 9, says: /string "name"/ },
  { name: 'arguments as a string', body: rpc('tools/call', { name: 'write_file', arguments: '{"path":"/etc/x"}' }, 'a'), status: 400, code: -32602, id: 'a', says: /"arguments" must be an object/ },
  { name: 'arguments as an array', body: call({ name: 'write_file', arguments: ['/etc/x'] }), status: 400, code: -32602, id: 9, says: /"arguments" must be an object/ },
  { name: 'a mapped target that is a number', body: call({ name: 'write_file', arguments: { path: 5, content: 'x' } }), status: 400, code: -32602, id: 9, says: /write_file: argument "path" must be a non-empty string, got/ },
  { name: 'a mapped target that is missing', body: call({ name: 'move_file', arguments: { source: join(ws, 'a') } }), status: 400, code: -32602, id: 9, says: /move_file: argument "destination"/ },
  { name: 'paths[] that is not an array', body: call({ name: 'read_multiple_files', arguments: { paths: '/etc/passwd' } }), status: 400, code: -32602, id: 9, says: /argument "paths\[\]" must be an array/ },
  { name: 'no bearer token', body: rpc('tools/list'), headers: {}, status: 401, code: -32600, id: null, says: /agent token required/ },
  { name: 'a wrong bearer token', body: rpc('tools/list'), headers: { authorization: 'Bearer not-the-token-0123456789' }, status: 401, code: -32600, id: null, says: /wrong agent token/ },
  { name: 'Basic instead of Bearer', body: rpc('tools/list'), headers: { authorization: basic }, status: 401, code: -32600, id: null, says: /agent token required/ },
];

/** The bridge still serves a normal message, and the upstream receives it. */
async function stillServes(before: number) {
  const ok = await post(g, rpc('tools/list'));
  expect(ok).toMatchObject({ status: 200, json: { result: { echo: 'tools/list' } } });
  expect(echo.seen.length).toBe(before + 1);
}

describe('bad input to the MCP bridge', () => {
  it.each(cases)('$name → $status JSON-RPC $code, journaled, not forwarded', async (c) => {
    const before = echo.seen.length;
    const records = g.records().length;
    const res = await post(g, c.body, c.headers ?? AUTH);
    expect(res.status).toBe(c.status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', error: { code: c.code } });
    if (c.id !== undefined) expect(res.json.id).toBe(c.id);
    expect(res.json.error.message).toMatch(c.says);
    if (c.status === 401) expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(echo.seen.length).toBe(before);
    const added = g.records().slice(records);
    expect(added).toEqual([
      expect.objectContaining({ type: 'refusal', source: 'bridge', status: c.status }),
    ]);
    expect((added[0] as JournalRecord & { reason: string }).reason).toMatch(c.says);
    // malformed input does not pause the session, and the bridge keeps serving
    expect(g.gw.sessions.isPaused('agent-1')).toBe(false);
    await stillServes(before);
  });

  // A chunked body past the limit is answered 413 on its socket (once it crashed the process).
  it('a chunked body over maxBodyBytes → 413, journaled, and the bridge keeps serving', async () => {
    const before = echo.seen.length;
    const res = await post(g, Readable.from(chunked()));
    expect(res.status).toBe(413);
    expect(res.json.error.message).toMatch(/larger than 2048 bytes/);
    expect(g.records().at(-1)).toMatchObject({ type: 'refusal', status: 413 });
    expect(echo.seen.length).toBe(before);
    await stillServes(before);
  });
});

describe('tool names that are Object.prototype members', () => {
  // Names of Object.prototype members are unmapped tools (once an inherited function was found).
  it('tools/call constructor is an unmapped tool: REVIEW, journaled, not forwarded', async () => {
    const before = echo.seen.length;
    const res = await post(g, call({ name: 'constructor', arguments: {} }));
    expect(echo.seen.length).toBe(before);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: 9, error: { code: -32001, data: { verdict: 'REVIEW' } } });
    const events = g.records().filter((r) => r.type === 'event');
    expect(events.at(-1)).toMatchObject({ kind: 'tool', target: 'constructor' });
  });
});

describe('upstream down', () => {
  it('an allowed tools/call → 502 with a JSON-RPC error (same id), event + outcome journaled', async () => {
    const call = rpc(
      'tools/call',
      { name: 'read_text_file', arguments: { path: join(ws, 'a') } },
      41,
    );
    const res = await post(down, call);
    expect(res.status).toBe(502);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 41, error: { code: -32002 } });
    expect(res.json.error.message).toMatch(/^trajgate: .*127\.0\.0\.1/);
    const event = down.records().find((r) => r.type === 'event');
    const recs = await waitForRecords(down, outcomeOf(event?.seq));
    expect(event).toMatchObject({ kind: 'read', verdict: 'ALLOW', session: 'agent-1' });
    expect(recs.find((r) => r.type === 'outcome')).toMatchObject({
      rid: event?.seq,
      status: 502,
      error: expect.stringMatching(/127\.0\.0\.1/),
    });
  });

  it('initialize → 502 with a JSON-RPC error, and the bridge keeps answering', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await post(down, rpc('initialize', {}, i));
      expect(res.status).toBe(502);
      expect(res.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32002 } });
      expect(res.json.error.message).toMatch(/^trajgate: /);
    }
  });

  // JSON-RPC 2.0 § 5: an error response carries the request's id, for every method.
  it('the 502 for initialize carries the request id', async () => {
    const res = await post(down, rpc('initialize', {}, 'init-1'));
    expect(res.status).toBe(502);
    expect(res.json.id).toBe('init-1');
  });
});

describe('methods other than POST', () => {
  // Only POST carries messages; a body on another method would reach the server unjudged.
  it('a tools/call body sent with PUT never reaches the upstream', async () => {
    const before = echo.seen.length;
    const body = rpc('tools/call', {
      name: 'write_file',
      arguments: { path: '/etc/cron.d/x', content: 'x' },
    });
    const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...AUTH },
      body,
      headersTimeout: 30_000,
    });
    await res.body.dump();
    const reached = echo.seen.slice(before).filter((s) => JSON.stringify(s.body).includes('cron'));
    expect(reached).toEqual([]);
  });
});
