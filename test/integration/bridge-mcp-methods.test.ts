import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EventRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { mcpPerTest, rawMcpSession, refused } from '../helpers/mcp.js';
import { startMcpResources } from '../helpers/mcp-resources.js';
import { layout, tempDir } from '../helpers/tmp.js';

/**
 * Every MCP method is judged, not only tools/call: resources (file: URIs are reads of their
 * path, forwarded as the URI of the path judged), prompts, completions and methods trajgate
 * does not know, against an SDK server whose `file:///{+path}` template reads any file. Reads
 * outside the workspace cross a `reads` boundary here (reads are no boundary by default).
 */
const root = tempDir();
const ws = join(root, 'ws');
const outside = join(root, 'outside');
layout(root, ['ws', 'outside'], { 'ws/link': '../outside' });
writeFileSync(join(ws, 'notes.txt'), 'notes inside');
writeFileSync(join(outside, 'secret.txt'), 'the secret');
const srv = await startMcpResources();
const AGENTS = ['agent-1', 'agent-2', 'agent-3', 'agent-4'];

const mcp = mcpPerTest();
const start = (bridge: Record<string, unknown> = {}) =>
  mcp.start({
    workspace: ws,
    agents: AGENTS.map((id) => ({ id, token: agentToken(id) })),
    policy: {
      pause: 'block',
      boundaries: { reads: { kinds: ['read'], outside: 'workspace', pauseAt: 1 } },
    },
    bridge: { upstream: srv.url, ...bridge },
  });
const connect = (g: TestGateway, id: string) => mcp.connect(g, agentToken(id));

const events = (g: TestGateway, session: string) =>
  g
    .records()
    .filter((r): r is EventRecord => r.type === 'event' && r.session === session)
    .map(({ kind, target, verdict, boundary }) => ({ kind, target, verdict, boundary }));

/** POSTs that reached the server (the SDK client's GET stream opens on its own time). */
const posts = () => srv.seen.filter((s) => s.method === 'POST').length;

/** The bodies of the JSON-RPC requests of `method` that reached the server. */
const reached = (method: string) =>
  srv.seen.flatMap((s) => {
    const body = s.body as { method?: string; params?: Record<string, unknown> } | undefined;
    return body?.method === method ? [body.params ?? {}] : [];
  });

describe('resources/read and resources/subscribe', () => {
  it('a file: URI inside is a read of its path, forwarded as the URI of the path judged', async () => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    const uri = `file://${ws}/sub/../notes.txt`;
    const res = await a1.readResource({ uri });
    expect(res.contents[0]).toMatchObject({ text: 'notes inside' });
    expect(reached('resources/read').at(-1)).toEqual({ uri: `file://${ws}/notes.txt` });
    expect(events(g, 'agent-1')).toEqual([
      { kind: 'read', target: `${ws}/sub/../notes.txt`, verdict: 'ALLOW', boundary: null },
    ]);
  });

  it.each([
    ['directly', `file://${outside}/secret.txt`, `${outside}/secret.txt`, false],
    ['through a link', `file://${ws}/link/secret.txt`, `${ws}/link/secret.txt`, false],
    [
      'FILE://localhost, escaped',
      `FILE://localhost${outside}/secret%2Etxt`,
      `${outside}/secret.txt`,
      false,
    ],
    ['subscribed to', `file://${outside}/secret.txt`, `${outside}/secret.txt`, true],
  ])('outside %s: refused and paused, nothing reaches the server', async (_n, uri, target, sub) => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    const reads = srv.reads.length;
    const subscribed = srv.subscribed.length;
    const err = await refused(sub ? a1.subscribeResource({ uri }) : a1.readResource({ uri }));
    expect(err.code).toBe(-32001);
    expect(err.message).toMatch(/paused this session/);
    expect(srv.reads.length).toBe(reads);
    expect(srv.subscribed.length).toBe(subscribed);
    expect(events(g, 'agent-1')).toEqual([
      { kind: 'read', target, verdict: 'PAUSE', boundary: 'reads' },
    ]);
  });

  it('a subscription inside goes on as the URI of the path judged', async () => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    await a1.subscribeResource({ uri: `file://${ws}/./notes.txt` });
    expect(srv.subscribed.at(-1)).toBe(`file://${ws}/notes.txt`);
    expect(events(g, 'agent-1')).toEqual([
      { kind: 'read', target: `${ws}/./notes.txt`, verdict: 'ALLOW', boundary: null },
    ]);
  });

  it.each([
    ['a host', `file://elsewhere${outside}/secret.txt`, /names the host elsewhere/],
    ['backslashes', `file://${ws}\\..\\..\\outside/secret.txt`, /character/],
    ['an encoded slash', `file://${ws}/..%2f..%2foutside/secret.txt`, /encoded/],
  ])('a file: URI with %s is refused for the model: -32602, one record', async (_n, uri, says) => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    const reads = srv.reads.length;
    const before = g.records().length;
    const err = await refused(a1.readResource({ uri }));
    expect(err.code).toBe(-32602);
    expect(err.message).toMatch(says);
    expect(srv.reads.length).toBe(reads);
    expect(g.records().slice(before)).toEqual([
      expect.objectContaining({ type: 'refusal', session: 'agent-1', status: 400 }),
    ]);
  });
});

describe('other URIs, prompts, completions and unknown methods are tool events', () => {
  const asks: [string, (c: Client) => Promise<unknown>, string][] = [
    [
      'memo://status',
      (c) => c.readResource({ uri: 'memo://status' }),
      'resources/read memo://status',
    ],
    [
      'prompts/get',
      (c) => c.getPrompt({ name: 'review', arguments: { file: 'a' } }),
      'prompts/get review',
    ],
    [
      'completion/complete',
      (c) =>
        c.complete({
          ref: { type: 'ref/prompt', name: 'review' },
          argument: { name: 'file', value: 'm' },
        }),
      'completion/complete prompt review',
    ],
    [
      'an unknown method',
      (c) => c.request({ method: 'vendor/run', params: { cmd: 'x' } }, z.object({})),
      'vendor/run',
    ],
  ];

  it.each(asks)(
    '%s → REVIEW by default (bridge.unmapped), nothing forwarded',
    async (_n, ask, target) => {
      const g = await start();
      const a1 = await connect(g, 'agent-1');
      const seen = posts();
      const err = await refused(ask(a1));
      expect(err.code).toBe(-32001);
      expect(err.message).toMatch(/refused this request/);
      expect(posts()).toBe(seen);
      expect(events(g, 'agent-1')).toEqual([
        { kind: 'tool', target, verdict: 'REVIEW', boundary: 'tool' },
      ]);
    },
  );

  it('the second tool crossing pauses, whatever method makes it', async () => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    await refused(a1.getPrompt({ name: 'review', arguments: { file: 'a' } }));
    const err = await refused(a1.readResource({ uri: 'memo://status' }));
    expect(err.message).toMatch(/paused this session/);
    expect(g.gw.sessions.isPaused('agent-1')).toBe(true);
  });

  it('with bridge.unmapped: allow they are forwarded and answered', async () => {
    const g = await start({ unmapped: 'allow' });
    const a1 = await connect(g, 'agent-1');
    expect((await a1.readResource({ uri: 'memo://status' })).contents[0]).toMatchObject({
      text: 'all good',
    });
    const prompt = await a1.getPrompt({ name: 'review', arguments: { file: 'a' } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: 'Review a' });
    const done = await a1.complete({
      ref: { type: 'ref/prompt', name: 'review' },
      argument: { name: 'file', value: 'm' },
    });
    expect(done.completion.values).toEqual(['m.ts']);
    expect(events(g, 'agent-1').map((e) => [e.target, e.verdict])).toEqual([
      ['resources/read memo://status', 'ALLOW'],
      ['prompts/get review', 'ALLOW'],
      ['completion/complete prompt review', 'ALLOW'],
    ]);
  });

  it('protocol methods (initialize, resources/list, prompts/list, ping) make no events', async () => {
    const g = await start();
    const a1 = await connect(g, 'agent-1');
    await a1.listResources();
    await a1.listPrompts();
    await a1.ping();
    expect(events(g, 'agent-1')).toEqual([]);
  });
});

describe('bad input: one JSON-RPC error with a one-line reason, one record, nothing forwarded', () => {
  const auth = { authorization: `Bearer ${agentToken('agent-1')}` };
  it.each([
    [
      'params a string',
      { method: 'vendor/run', params: 'rm -rf' },
      400,
      -32600,
      /"params" must be/,
    ],
    ['method a number', { method: 7 }, 400, -32600, /"method" must be/],
    ['method 300 characters', { method: 'v/'.repeat(150) }, 400, -32600, /longer than 256/],
    ['id an object', { id: { a: 1 }, method: 'vendor/run' }, 400, -32600, /"id" must be/],
    ['resources/read with no uri', { method: 'resources/read', params: {} }, 400, -32602, /"uri"/],
    [
      'completion/complete with an odd ref',
      { method: 'completion/complete', params: { ref: { type: 'x' } } },
      400,
      -32602,
      /ref\/prompt/,
    ],
    [
      'an unknown method with positional params',
      { method: 'vendor/run', params: [1, { a: [] }] },
      200,
      -32001,
      /refused this request: vendor\/run/,
    ],
  ])('%s → %s %s', async (_n, fields, status, code, says) => {
    const g = await start();
    const s = await rawMcpSession(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, auth);
    const seen = posts();
    const before = g.records().length;
    const res = await s.send(JSON.stringify({ jsonrpc: '2.0', id: 5, ...fields }));
    expect(res.status).toBe(status);
    expect(res.messages).toHaveLength(1);
    expect(res.messages[0]?.error.code).toBe(code);
    expect(res.messages[0]?.error.message).toMatch(says);
    if (status === 400) expect(res.messages[0]?.error.message).not.toContain('\n');
    expect(posts()).toBe(seen);
    // Its outcome follows a judged one (a record about the same request, not a second one).
    expect(
      g
        .records()
        .slice(before)
        .filter((r) => r.type !== 'outcome'),
    ).toHaveLength(1);
  });
});
