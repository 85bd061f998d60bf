import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startMcpEcho } from '../helpers/mcp.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Canonical bodies, raw over HTTP with a recording upstream: the upstream receives trajgate's
 * serialisation of the message it judged (never the client's bytes or headers about them), and
 * every body trajgate cannot read as the next parser would is refused with one journal record.
 */
const echo = await startMcpEcho();
const ws = tempDir();
const TOKEN = 'agent-1-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };
let mcp: TestGateway;
let http: TestGateway;
const base = (bridge: Record<string, unknown>) => ({
  workspace: ws,
  agents: [{ id: 'agent-1', token: TOKEN }],
  policy: { pause: 'block' },
  bridge: { upstream: echo.url, maxBodyBytes: 4096, ...bridge },
});
beforeAll(async () => {
  mcp = await startTestGateway(base({}), { dir: tempDir() });
  http = await startTestGateway(
    base({
      protocol: 'http',
      routes: [{ method: 'POST', path: '/fs/write', kind: 'write', target: '$.path' }],
    }),
    { dir: tempDir() },
  );
});
afterAll(async () => {
  await mcp.stop();
  await http.stop();
});

async function post(
  g: TestGateway,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
) {
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH, ...headers },
    body,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await res.body.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // a plain-text refusal (HTTP adapter) or an empty 202
  }
  return { status: res.statusCode, json, text };
}

const readCall = (path: string, id = 7) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'read_text_file', arguments: { path } },
});

describe('what the tool server receives', () => {
  it('is JSON.stringify of the message judged, paths resolved, with its own headers', async () => {
    const before = echo.seen.length;
    const sent =
      '{ "jsonrpc" : "2.0", "id" : 7, "method" : "tools/call",\n' +
      '  "params" : { "name" : "read_text_file", "arguments" : { "p\\u0061th" : "notes/a.txt" } } }';
    const res = await post(mcp, '/mcp', gzipSync(sent), {
      'content-type': 'application/json; charset="UTF-8"',
      'content-encoding': 'gzip',
      digest: 'sha-256=AAAA',
    });
    expect(res.status).toBe(200);
    const got = echo.seen.slice(before);
    expect(got).toHaveLength(1);
    const canonical = JSON.stringify(readCall(join(ws, 'notes/a.txt')));
    expect(got[0]?.raw).toBe(canonical);
    expect(got[0]?.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(canonical)),
    });
    for (const h of ['content-encoding', 'transfer-encoding', 'digest', 'authorization'])
      expect(got[0]?.headers[h], h).toBeUndefined();
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])(
    '%s bodies are decoded, then judged: a read inside goes, a write outside pauses',
    async (coding, zip) => {
      const before = echo.seen.length;
      const read = await post(mcp, '/mcp', zip(JSON.stringify(readCall('r.txt'))), {
        'content-encoding': coding,
      });
      expect(read.json.result).toEqual({ echo: 'tools/call' });
      const write = {
        ...readCall('/etc/x'),
        params: { name: 'write_file', arguments: { path: '/etc/x', content: '' } },
      };
      const refused = await post(mcp, '/mcp', zip(JSON.stringify(write)), {
        'content-encoding': coding,
      });
      expect(refused.json.error).toMatchObject({ code: -32001, data: { verdict: 'PAUSE' } });
      expect(echo.seen.length).toBe(before + 1);
      mcp.gw.sessions.resume('agent-1');
    },
  );
});

const call = (args: string) =>
  `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write_file","arguments":${args}}}`;
// prettier-ignore
const bad: { name: string; body: string | Buffer; headers?: Record<string, string>; status: number; code: number; says: RegExp }[] = [
  { name: 'charset=utf-7', body: call('{"path":"+AC4ALg-/x","content":""}'), headers: { 'content-type': 'application/json; charset=utf-7' }, status: 415, code: -32600, says: /charset "utf-7"/ },
  { name: 'charset=iso-8859-1', body: '{}', headers: { 'content-type': 'application/json;charset=ISO-8859-1' }, status: 415, code: -32600, says: /charset "iso-8859-1"/ },
  { name: 'charset=utf-16le', body: '{}', headers: { 'content-type': 'application/json; charset="utf-16le"' }, status: 415, code: -32600, says: /charset "utf-16le"/ },
  { name: 'a second charset after utf-8', body: '{}', headers: { 'content-type': 'application/json; charset=utf-8; charset=utf-7' }, status: 415, code: -32600, says: /utf-7/ },
  { name: 'Content-Encoding: compress', body: '{}', headers: { 'content-encoding': 'compress' }, status: 415, code: -32600, says: /Content-Encoding "compress"/ },
  { name: 'Content-Encoding: gzip, zstd', body: '{}', headers: { 'content-encoding': 'gzip, zstd' }, status: 415, code: -32600, says: /"zstd"/ },
  { name: 'gzip that is not gzip', body: '{}', headers: { 'content-encoding': 'gzip' }, status: 400, code: -32700, says: /not valid gzip/ },
  { name: 'a gzip bomb past maxBodyBytes once inflated', body: gzipSync(call(`{"path":"a","content":"${'x'.repeat(1_000_000)}"}`)), headers: { 'content-encoding': 'gzip' }, status: 413, code: -32600, says: /larger than 4096 bytes/ },
  { name: 'invalid UTF-8', body: Buffer.concat([Buffer.from(call('{"path":"a')), Buffer.from([0xc0, 0xae]), Buffer.from('","content":""}')]), status: 400, code: -32700, says: /not valid UTF-8/ },
  { name: 'a duplicate key at the top', body: call('{"path":"a","content":""}').replace('"method":', '"method":"tools/list","method":'), status: 400, code: -32700, says: /"method" appears twice/ },
  { name: 'a duplicate key in arguments', body: call('{"path":"a","content":"","path":"/etc/x"}'), status: 400, code: -32700, says: /"path" appears twice/ },
  { name: 'a duplicate key spelled with an escape', body: call('{"path":"a","content":"","p\\u0061th":"/etc/x"}'), status: 400, code: -32700, says: /"path" appears twice/ },
  { name: 'an id too large for a double', body: call('{"path":"a","content":""}').replace('"id":9', '"id":1e999'), status: 400, code: -32700, says: /too large/ },
  { name: 'an empty body', body: '', status: 400, code: -32700, says: /body is empty/ },
  { name: 'a request that is also a response', body: '{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', status: 400, code: -32600, says: /request or a response/ },
];

describe('bodies trajgate cannot read as the server would', () => {
  it.each(bad)('$name → $status, one journal record, nothing forwarded', async (c) => {
    const before = echo.seen.length;
    const records = mcp.records().length;
    const res = await post(mcp, '/mcp', c.body, c.headers);
    expect(res.status).toBe(c.status);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', error: { code: c.code } });
    expect(res.json.error.message).toMatch(c.says);
    expect(res.json.error.message).not.toMatch(/\n/);
    expect(echo.seen.length).toBe(before);
    const added = mcp.records().slice(records);
    expect(added).toEqual([
      expect.objectContaining({ type: 'refusal', session: 'agent-1', status: c.status }),
    ]);
    expect((added[0] as JournalRecord & { reason: string }).reason).toMatch(c.says);
  });
});

describe('the HTTP adapter and ingest read bodies the same way', () => {
  it('HTTP: gzip decoded, relative $.path forwarded absolute, the body re-serialised', async () => {
    const before = echo.seen.length;
    const res = await post(http, '/fs/write', gzipSync('{"path" : "out/r.txt", "n": 1}'), {
      'content-encoding': 'gzip',
    });
    expect(res.status).toBe(202); // the recorder's answer to a message without an id
    expect(echo.seen.slice(before).map((s) => s.raw)).toEqual([
      JSON.stringify({ path: join(ws, 'out/r.txt'), n: 1 }),
    ]);
  });

  const utf7 = { 'content-type': 'application/json; charset=utf-7' };
  // prettier-ignore
  it.each([
    { name: 'charset=utf-7', body: '{"path":"a"}', headers: utf7, status: 415, says: /utf-7/ },
    { name: 'a duplicate key', body: '{"path":"a","path":"/etc/x"}', headers: {}, status: 400, says: /appears twice/ },
    { name: 'a ~ path', body: '{"path":"~/x"}', headers: {}, status: 400, says: /starts with ~/ },
    { name: 'a file: path', body: '{"path":"file:///etc/x"}', headers: {}, status: 400, says: /file: URI/ },
  ])('HTTP: $name → $status, one journal record, nothing forwarded', async (c) => {
    const before = echo.seen.length;
    const records = http.records().length;
    const res = await post(http, '/fs/write', c.body, c.headers);
    expect(res.status).toBe(c.status);
    expect(res.text).toMatch(c.says);
    expect(echo.seen.length).toBe(before);
    expect(http.records().slice(records)).toEqual([
      expect.objectContaining({ type: 'refusal', status: c.status, reason: expect.stringMatching(c.says) }),
    ]);
  });

  // prettier-ignore
  it.each([
    { name: 'charset=utf-7', body: '{"kind":"read","target":"a"}', headers: utf7, status: 415, code: 'E_BODY_UNSUPPORTED' },
    { name: 'a duplicate key', body: '{"kind":"read","target":"a","target":"/etc/x"}', headers: {}, status: 400, code: 'E_EVENT_INVALID' },
  ])('ingest: $name → $status $code, one journal record', async (c) => {
    const records = mcp.records().length;
    const res = await post(mcp, '/events', c.body, c.headers);
    expect(res).toMatchObject({ status: c.status, json: { error: { code: c.code } } });
    expect(mcp.records().slice(records)).toEqual([
      expect.objectContaining({ type: 'refusal', status: c.status }),
    ]);
  });

  it('ingest: a gzip body is decoded and judged', async () => {
    const res = await post(mcp, '/events', gzipSync('{"kind":"read","target":"a"}'), {
      'content-encoding': 'gzip',
    });
    expect(res).toMatchObject({ status: 200, json: { verdict: 'ALLOW' } });
  });
});
