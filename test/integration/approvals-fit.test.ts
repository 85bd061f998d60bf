import { afterEach, describe, expect, it } from 'vitest';
import { adminClient, agentAuth } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import type { EventRecord } from '../../src/journal/records.js';

/**
 * Approvals that fit what was refused. The server fits a pattern to a refused
 * event (its method and path prefix); `trajgate approve --from SEQ` uses it, so approving one
 * refused POST does not approve GET; refusals say why a request missed the allowlist.
 */
const up = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENT = { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' };
const auth = agentAuth(AGENT.id, AGENT.token);
const cwd = tempDir();

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.stop();
  g = undefined;
});

async function start(allow: string[] = []): Promise<TestGateway> {
  g = await startTestGateway({
    agents: [AGENT],
    policy: { pause: 'block' },
    network: { allow, allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  return g;
}

const send = (gw: TestGateway, method: string, path: string) =>
  curl([
    ...auth,
    '-x',
    gw.proxyUrl,
    '-X',
    method,
    ...(method === 'POST' ? ['-d', 'x=1'] : []),
    `${up.url}${path}`,
  ]);

function op(gw: TestGateway, args: string[]) {
  return runCliAsync([...args, '--admin', `http://127.0.0.1:${gw.gw.admin.port}`], {
    cwd,
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });
}

describe('an approval fitted to a refused POST', () => {
  it('GET /api/events/:seq suggests the method and path prefix; approve --from admits POST /v1/… and not GET', async () => {
    const gw = await start();
    const api = adminClient(gw.gw.admin.port, ADMIN);
    expect((await send(gw, 'POST', '/v1/x')).status).toBe(403);
    const refused = gw.records().find((r): r is EventRecord => r.type === 'event') as EventRecord;
    expect(refused).toMatchObject({ method: 'POST', verdict: 'REVIEW' });

    const looked = await api.get(`/api/events/${refused.seq}`);
    expect(looked.status).toBe(200);
    expect(looked.json.event).toMatchObject({ seq: refused.seq, target: `${up.url}/v1/x` });
    const pattern = `POST http://127.0.0.1:${up.port}/v1/`;
    expect(looked.json.suggestion).toEqual({ pattern, kind: 'network' });

    const cli = await op(gw, ['approve', '--from', String(refused.seq), '--ttl', '1h']);
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);
    expect(cli.stdout).toMatch(
      new RegExp(
        `^approved POST http://127\\.0\\.0\\.1:${up.port}/v1/ for agent-1 until \\S+ \\(id (a\\d+); undo: trajgate revoke \\1\\)\\n$`,
      ),
    );
    const approval = (await api.get('/api/sessions/agent-1')).json.approvals[0];
    expect(approval).toMatchObject({
      pattern,
      session: 'agent-1',
      origin: 'operator',
      source: 'operator',
      by: 'operator',
    });
    expect(approval.id).toMatch(/^a\d+$/);

    // POST under /v1/ is approved; GET on the same path, and POST elsewhere, are not.
    expect((await send(gw, 'POST', '/v1/y')).status).toBe(200);
    const get = await send(gw, 'GET', '/v1/x');
    expect(get.status).toBe(403);
    expect(get.body).toContain('host allowed for POST only');
    expect((await send(gw, 'POST', '/v2/x')).status).toBe(403);
    expect(up.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /v1/y']);
  });

  it('unknown or malformed event seqs: 404 E_UNKNOWN_EVENT, 400 E_BAD_FIELD; approve --from exits 1', async () => {
    const gw = await start();
    const api = adminClient(gw.gw.admin.port, ADMIN);
    const unknown = await api.get('/api/events/999');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('E_UNKNOWN_EVENT');
    const bad = await api.get('/api/events/x1');
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('E_BAD_FIELD');
    const cli = await op(gw, ['approve', '--from', '999']);
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain('no event with seq 999');
  });
});

describe('refusals say why the allowlist missed', () => {
  it.each([
    [[`GET http://127.0.0.1:PORT/`], 'POST', '/v1/x', 'host allowed for GET only'],
    [[`http://127.0.0.1:PORT/a/`], 'GET', '/b/x', 'path /a/ allowed, /b/x is not'],
  ])('%j, %s %s → "%s"', async (allow, method, path, why) => {
    const gw = await start(allow.map((p) => p.replace('PORT', String(up.port))));
    const res = await send(gw, method, path);
    expect(res.status).toBe(403);
    expect(res.body).toContain(why);
    const event = gw.records().find((r) => r.type === 'event') as EventRecord;
    expect(event.reason).toContain(`127.0.0.1:${up.port} (${why})`);
  });
});
