import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { EventRecord } from '../../src/journal/records.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { ChildGateway } from '../helpers/child-gateway.js';
import { startChild, tempConfig } from '../helpers/child-gateway.js';
import { readRecords } from '../helpers/gateway.js';
import { mcpClient, startSupergateway } from '../helpers/mcp.js';
import { layout, tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * Trajectory rules live, across listeners: tool calls through the bridge (the official
 * server-filesystem behind supergateway, driven by the official SDK client) and requests
 * through the proxy form one trajectory per agent. Each gateway is the built CLI in a child
 * process, so a `kill -9` and a restart on the same journal show the rules' state comes back.
 */
const root = tempDir();
const ws = join(root, 'ws');
const home = join(root, 'home');
layout(root, ['ws', 'home', 'home/.ssh']);
writeFileSync(join(home, '.ssh', 'id_ed25519'), 'not a real key');
const sg = await startSupergateway([ws, home]);
const allowed = await startUpstream();
const other = await startUpstream();
const AGENTS = ['agent-1', 'agent-2', 'agent-3', 'agent-4'];
const ROOT = join(import.meta.dirname, '../..');
const token = (id: string) => `${id}-token-0123456789abcdef`;
const ADMIN = 'admin-token-0123456789abcdef';
const UPLOAD = 3_000;

// The example config's rules as written, but for a volume threshold a test can reach quickly.
const example = parse(readFileSync(join(ROOT, 'config/trajgate.example.yaml'), 'utf8'));
const sequences = (example.policy.sequences as { volume?: object }[]).map((r) =>
  r.volume ? { ...r, volume: { ...r.volume, up: '2KB' } } : r,
);
const { journal, config } = tempConfig({
  workspace: ws,
  admin: { token: ADMIN },
  agents: AGENTS.map((id) => ({ id, token: token(id) })),
  policy: { pause: 'block', sequences },
  network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
  bridge: { upstream: sg.url },
});

let gateway: ChildGateway | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

async function start(): Promise<ChildGateway> {
  gateway = await startChild(config, 20_000);
  return gateway;
}

async function tool(g: ChildGateway, id: string, name: string, path: string) {
  const bridge = Number(/MCP at http:\/\/127\.0\.0\.1:(\d+)/.exec(g.banner)?.[1]);
  const client = await mcpClient(`http://127.0.0.1:${bridge}/mcp`, token(id));
  clients.push(client);
  return client.callTool({ name, arguments: { path } });
}

const get = (g: ChildGateway, id: string, url: string) =>
  viaProxy(g.proxyUrl, url, agentAuth(id, token(id)));

function events(session: string): EventRecord[] {
  return readRecords(journal).filter(
    (r): r is EventRecord => r.type === 'event' && r.session === session,
  );
}

const last = (session: string) => events(session).at(-1) as EventRecord;

describe('trajectory rules across the bridge and the proxy', () => {
  it('a secret read through the bridge, then an allowlisted request → PAUSE: secret-then-egress', async () => {
    const g = await start();
    const key = join(home, '.ssh', 'id_ed25519');
    const read = await tool(g, 'agent-1', 'read_text_file', key);
    expect(read.isError).toBeFalsy();
    const marking = last('agent-1');
    expect(marking).toMatchObject({
      kind: 'read',
      verdict: 'ALLOW',
      marks: ['secret-then-egress'],
    });
    const res = await get(g, 'agent-1', `${allowed.url}/upload`);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=secret-then-egress');
    expect(last('agent-1')).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'secret-then-egress',
      approved: true,
      rule: { name: 'secret-then-egress', after: marking.seq },
    });
    expect(last('agent-1').reason).toContain(`after #${marking.seq} read ${key}`);
  });

  it('a failed tool call, then an unapproved request → PAUSE at the first crossing', async () => {
    const g = gateway as ChildGateway;
    const failed = await tool(g, 'agent-2', 'read_text_file', join(ws, 'missing.txt'));
    expect(failed.isError).toBe(true);
    const call = last('agent-2');
    const res = await get(g, 'agent-2', `${other.url}/new-host`);
    expect(res.status).toBe(403);
    // An outcome is written with the next record: the request's event above.
    const outcome = readRecords(journal).find((r) => r.type === 'outcome' && r.rid === call.seq);
    expect(outcome).toMatchObject({ failed: true });
    expect(last('agent-2')).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'drift-after-failure',
      count: 1,
      rule: { name: 'drift-after-failure', after: call.seq },
    });
  });

  it('an upload past the volume threshold, then a request → REVIEW: egress-volume', async () => {
    const g = gateway as ChildGateway;
    const url = `${allowed.url}/bulk`;
    const auth = agentAuth('agent-3', token('agent-3'));
    const body = 'x'.repeat(UPLOAD);
    const up = await curl(['-s', '-x', g.proxyUrl, ...auth, '--data-binary', body, url]);
    expect(up.status).toBe(200);
    expect(last('agent-3')).toMatchObject({ verdict: 'ALLOW' });
    const next = await get(g, 'agent-3', `${allowed.url}/again`);
    expect(next.status).toBe(403);
    expect(last('agent-3')).toMatchObject({ verdict: 'REVIEW', boundary: 'egress-volume' });
  });

  it('a secret read, then kill -9: after the restart the same state decides', async () => {
    let g = gateway as ChildGateway;
    await tool(g, 'agent-4', 'read_text_file', join(home, '.ssh', 'id_ed25519'));
    const marking = last('agent-4');
    expect(marking.marks).toEqual(['secret-then-egress']);
    await g.kill('SIGKILL');
    g = await start();
    const api = adminClient(g.adminPort, ADMIN);
    const sessions = (await api.get('/api/sessions')).json.sessions as {
      id: string;
      state: string;
    }[];
    const state = (id: string) => sessions.find((s) => s.id === id)?.state;
    expect([state('agent-1'), state('agent-2')]).toEqual(['paused', 'paused']);
    const res = await get(g, 'agent-4', `${allowed.url}/after-restart`);
    expect(res.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=secret-then-egress');
    expect(last('agent-4').rule).toEqual({ name: 'secret-then-egress', after: marking.seq });
    expect((await get(g, 'agent-3', `${allowed.url}/still`)).status).toBe(403);
    expect(last('agent-3')).toMatchObject({ verdict: 'REVIEW', boundary: 'egress-volume' });
    await g.kill('SIGTERM');
  });
});
