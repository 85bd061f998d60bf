import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * `agents[].allow` admits one agent and not another; a role's `allow`, shared
 * through `agents[].roles`, admits its agents and not the others. The session detail shows
 * each session's effective allowlist and where each entry comes from.
 */
const own = await startUpstream();
const shared = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const OWN = `127.0.0.1:${own.port}`;
const SHARED = `127.0.0.1:${shared.port}`;
const AGENTS = [
  { id: 'builder', token: 'builder-token-0123456789abcdef', allow: [OWN], roles: ['ci'] },
  { id: 'tester', token: 'tester-token-0123456789abcdef', roles: ['ci'] },
  { id: 'writer', token: 'writer-token-0123456789abcdef' },
];
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);

let g: TestGateway;
let api: AdminClient;
beforeAll(async () => {
  g = await startTestGateway({
    agents: AGENTS,
    roles: { ci: { allow: [SHARED] } },
    policy: { pause: 'block' },
    network: { allow: ['docs.example'], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  api = adminClient(g.gw.admin.port, ADMIN);
});
afterAll(() => g.stop());

describe('per-agent and role allowlists', () => {
  it("an agent's own allow admits it and not another agent", async () => {
    expect((await viaProxy(g.proxyUrl, `${own.url}/b`, auth(0))).status).toBe(200);
    const refused = await viaProxy(g.proxyUrl, `${own.url}/t`, auth(1));
    expect(refused.status).toBe(403);
    expect(own.seen.map((r) => r.url)).toEqual(['/b']);
  });

  it("a role's allow admits the agents listing the role and not the others", async () => {
    expect((await viaProxy(g.proxyUrl, `${shared.url}/b`, auth(0))).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${shared.url}/t`, auth(1))).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${shared.url}/w`, auth(2))).status).toBe(403);
    expect(shared.seen.map((r) => r.url)).toEqual(['/b', '/t']);
  });

  it('GET /api/sessions/:id shows the effective allowlist and the entries with their source', async () => {
    const builder = (await api.get('/api/sessions/builder')).json;
    expect(builder.allowlist).toEqual(['docs.example', OWN, SHARED]);
    expect(builder.approvals.map((a: { id: string; source: string }) => [a.id, a.source])).toEqual([
      ['c1', 'network.allow'],
      ['c2', 'agents.builder.allow'],
      ['c3', 'roles.ci.allow'],
    ]);
    expect((await api.get('/api/sessions/tester')).json.allowlist).toEqual([
      'docs.example',
      SHARED,
    ]);
    expect((await api.get('/api/sessions/writer')).json.allowlist).toEqual(['docs.example']);
    const revoke = await api.call('DELETE', '/api/approvals/c3');
    expect([revoke.status, revoke.json.error.code]).toEqual([409, 'E_CONFIG_APPROVAL']);
    expect(revoke.json.error.message).toContain('(roles.ci.allow): edit the config');
  });
});
