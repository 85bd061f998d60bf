import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { jsonRpcMessages, mcpPerTest, refused } from '../helpers/mcp.js';
import { startMcpTools } from '../helpers/mcp-tools.js';
import { pauseByIngest } from '../helpers/pause.js';
import { readBody } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * How the bridge reads a tools/list answer it must cut: compressed, in an event stream after a
 * notification, too large, not a list; and held while its session is paused. The SDK tools
 * server answers; a front on loopback passes its answers on, gzip-coded, and can spoil the
 * tools/list ones (`spoil`), as a broken or hostile server would.
 */
type Spoil = (body: string, type: string) => { body: Buffer | string; type: string };
const srv = await startMcpTools({ json: false });
let spoil: Spoil | null = null;
const front = createServer(async (req, res) => {
  // The SDK server is stateless: no server stream to open, nor session to end.
  if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
  const { raw, body } = await readBody(req);
  const up = await request(srv.url, {
    method: 'POST',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: raw,
  });
  const text = await up.body.text();
  const type = up.headers['content-type'] as string;
  const listing = (body as { method?: string }).method === 'tools/list';
  const out = listing && spoil !== null ? spoil(text, type) : { body: text, type };
  if (up.statusCode === 202) return void res.writeHead(202).end();
  res.writeHead(up.statusCode, { 'content-type': out.type, 'content-encoding': 'gzip' });
  res.end(gzipSync(out.body));
});
await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
afterAll(() => {
  front.closeAllConnections();
  return new Promise<void>((r) => front.close(() => r()));
});
const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`;

const mcp = mcpPerTest();
const start = (bridge: Record<string, unknown> = {}) =>
  mcp.start({
    agents: [{ id: 'agent-1', token: agentToken('agent-1') }],
    policy: { pause: 'hold', holdTimeout: '10s' },
    bridge: { upstream: frontUrl, unmapped: 'allow', tools: { deny: ['fails'] }, ...bridge },
  });
const bridgeUrl = (g: TestGateway) => `http://127.0.0.1:${g.gw.bridge.port}/mcp`;
const quoted = (text: string) => JSON.stringify(text).slice(1, -1);
const names = (list: { tools: { name: string }[] }) => list.tools.map((t) => t.name).sort();

describe('a gzip-coded event stream', () => {
  it('is decoded, cut, and written again identity-coded with its notifications', async () => {
    spoil = (body, type) => ({
      body: `: a comment\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing"}}\n\n${body}`,
      type,
    });
    const g = await start();
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    expect(names(await a1.listTools())).toEqual(['big-fail', 'held-fail', 'ok', 'throws']);
    const res = await request(bridgeUrl(g), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agentToken('agent-1')}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });
    const text = await res.body.text();
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(text));
    const messages = jsonRpcMessages('text/event-stream', text);
    expect(messages[0]).toMatchObject({ method: 'notifications/message' });
    expect(messages[1]).toMatchObject({ id: 7 });
    expect(messages[1].result.tools.map((t: { name: string }) => t.name)).not.toContain('fails');
  });
});

describe('an answer that cannot be read is refused, and journaled', () => {
  const listed = (type: string) => `data: {"jsonrpc":"2.0","id":1,"result":${type}}\n\n`;
  it.each([
    ['no tools array', () => listed('{"tools":"ok"}'), 'has no "tools" array in its result'],
    ['a nameless tool', () => listed('{"tools":[{"title":"x"}]}'), 'without a string "name"'],
    ['no response', () => ': nothing\n\n', 'holds no JSON-RPC response to the request'],
    ['bad JSON', () => 'data: {"jsonrpc":\n\n', 'holds no JSON-RPC response to the request'],
    [
      'too large',
      () => listed(`{"tools":[{"name":"ok","description":"${'d'.repeat(9000)}"}]}`),
      'decodes to more than 8192 bytes',
    ],
  ])('%s', async (_, body, reason) => {
    spoil = (_text, type) => ({ body: body(), type });
    const g = await start({ maxBodyBytes: 1024 });
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    // A 502 as other upstream failures: the SDK quotes the JSON-RPC error it carries.
    const err = await refused(a1.listTools());
    expect(err.message).toContain(quoted(reason));
    await waitFor(() =>
      g
        .records()
        .some((r) => r.type === 'refusal' && (r as { reason: string }).reason.includes(reason)),
    );
  });

  it('past the bound as sent, and as an unknown type', async () => {
    const incompressible = randomBytes(20_000);
    spoil = () => ({ body: incompressible, type: 'application/json' });
    const g = await start({ maxBodyBytes: 1024 });
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    const big = await refused(a1.listTools());
    expect(big.message).toContain('answered more than 8192 bytes');
    spoil = (text) => ({ body: text, type: 'text/plain' });
    expect((await refused(a1.listTools())).message).toContain('is text/plain, not JSON');
  });
});

describe('while paused', () => {
  it('a tools/list is held until the resume, then answered cut', async () => {
    spoil = null;
    const g = await start();
    const a1 = await mcp.connect(g, agentToken('agent-1'));
    await pauseByIngest(g);
    let answered = false;
    const listing = a1.listTools().then((l) => ((answered = true), l));
    await waitFor(() => g.gw.sessions.held('agent-1').length === 1);
    expect(answered).toBe(false);
    g.gw.sessions.resume('agent-1');
    expect(names(await listing)).not.toContain('fails');
  });
});
