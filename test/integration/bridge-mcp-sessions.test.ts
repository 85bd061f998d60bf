import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { INITIALIZE, jsonRpcMessages } from '../helpers/mcp.js';
import { startMcpResources } from '../helpers/mcp-resources.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * An MCP session belongs to the agent that opened it: the Mcp-Session-Id the server answers
 * initialize with reaches the agent tagged with its identity, and only that agent's requests
 * carry it on (stateful SDK server with sessions, raw HTTP so that other agents can try ids).
 */
const srv = await startMcpResources();
const dir = tempDir();
const config = {
  workspace: tempDir(),
  agents: ['agent-1', 'agent-2'].map((id) => ({ id, token: agentToken(id) })),
  policy: { pause: 'block' },
  bridge: { upstream: srv.url },
};
let g: TestGateway = await startTestGateway(config, { dir });
afterAll(() => g.stop());

interface Exchange {
  status: number;
  session: string | null;
  messages: Record<string, any>[];
}

/** One request to the bridge as `agent`, with `session` as its Mcp-Session-Id (or several). */
async function exchange(
  agent: string,
  method: 'POST' | 'GET' | 'DELETE',
  session: string | string[] | null,
  body?: unknown,
): Promise<Exchange> {
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/mcp`, {
    method,
    headers: {
      authorization: `Bearer ${agentToken(agent)}`,
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(session === null ? {} : { 'mcp-session-id': session }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const type = res.headers['content-type'];
  const messages = jsonRpcMessages(typeof type === 'string' ? type : null, await res.body.text());
  const id = res.headers['mcp-session-id'];
  return {
    status: res.statusCode,
    session: typeof id === 'string' ? id : null,
    messages,
  };
}

const list = (id = 7) => ({ jsonrpc: '2.0', id, method: 'resources/list' });

async function open(agent: string): Promise<string> {
  const init = await exchange(agent, 'POST', null, INITIALIZE);
  expect(init.status).toBe(200);
  const session = init.session as string;
  const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
  expect((await exchange(agent, 'POST', session, note)).status).toBe(202);
  return session;
}

const refusals = () => g.records().filter((r) => r.type === 'refusal');

describe('Mcp-Session-Id is bound to the agent that initialized it', () => {
  it('the agent gets the server’s id tagged; the server gets its own id back', async () => {
    const s1 = await open('agent-1');
    const [raw, tag] = s1.split('.');
    expect(tag).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(srv.sessions()).toContain(raw);
    const res = await exchange('agent-1', 'POST', s1, list());
    expect(res.status).toBe(200);
    expect(res.messages[0]).toMatchObject({ id: 7, result: { resources: expect.any(Array) } });
    expect(srv.seen.at(-1)?.headers['mcp-session-id']).toBe(raw);
  });

  it('another agent using it (POST, GET, DELETE) gets 404, one record each, nothing forwarded', async () => {
    const s1 = await open('agent-1');
    const seen = srv.seen.length;
    const before = refusals().length;
    const post = await exchange('agent-2', 'POST', s1, list(9));
    expect(post.status).toBe(404);
    expect(post.messages).toEqual([
      { jsonrpc: '2.0', id: 9, error: { code: -32001, message: expect.any(String) } },
    ]);
    expect(post.messages[0]?.error.message).toMatch(
      /^trajgate: the Mcp-Session-Id was not opened by agent-2 through trajgate .*send initialize without it/,
    );
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await exchange('agent-2', method, s1);
      expect(res.status, method).toBe(404);
      expect(res.messages[0]?.error.code, method).toBe(-32001);
    }
    expect(srv.seen.length).toBe(seen);
    expect(refusals().slice(before)).toEqual(
      ['POST', 'GET', 'DELETE'].map((method) =>
        expect.objectContaining({ source: 'bridge', session: 'agent-2', status: 404, method }),
      ),
    );
    // Its DELETE never reached the server: the owner's session still runs.
    expect((await exchange('agent-1', 'POST', s1, list())).status).toBe(200);
  });

  it.each([
    ['the server’s own id (never through trajgate)', (s: string) => s.split('.')[0] as string],
    ['a made-up tag', (s: string) => `${s.split('.')[0]}.${'A'.repeat(22)}`],
    ['an empty id', () => ''],
  ])('%s → 404, journaled, nothing forwarded', async (_name, spell) => {
    const s1 = await open('agent-1');
    const seen = srv.seen.length;
    const res = await exchange('agent-1', 'POST', spell(s1), list());
    expect(res.status).toBe(404);
    expect(srv.seen.length).toBe(seen);
    expect(refusals().at(-1)).toMatchObject({ session: 'agent-1', status: 404 });
  });

  it('Mcp-Session-Id sent twice → 400, nothing forwarded', async () => {
    const s1 = await open('agent-1');
    const seen = srv.seen.length;
    const res = await exchange('agent-1', 'POST', [s1, s1], list());
    expect(res.status).toBe(400);
    expect(res.messages[0]?.error.message).toMatch(/more than one Mcp-Session-Id/);
    expect(srv.seen.length).toBe(seen);
  });

  it('the owner’s DELETE ends it upstream; the server’s 404 for it then passes through', async () => {
    const s1 = await open('agent-1');
    expect((await exchange('agent-1', 'DELETE', s1)).status).toBe(200);
    expect(srv.sessions()).not.toContain(s1.split('.')[0]);
    const after = await exchange('agent-1', 'POST', s1, list());
    expect(after.status).toBe(404);
    expect(after.messages[0]?.error.message).toBe('no session');
  });

  it('after a restart the agent’s sessions go on; another agent’s use is still refused', async () => {
    const s1 = await open('agent-1');
    await g.stop();
    g = await startTestGateway(config, { dir });
    expect((await exchange('agent-1', 'POST', s1, list())).status).toBe(200);
    expect((await exchange('agent-2', 'POST', s1, list())).status).toBe(404);
  });
});
