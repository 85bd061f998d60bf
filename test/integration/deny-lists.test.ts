import { afterEach, describe, expect, it } from 'vitest';
import { adminClient, agentAuth, viaProxy } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { connectTunnel, roundTrip } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';

/**
 * Deny patterns (`network.deny`, and operators' via the API and `trajgate
 * deny-pattern`) are checked first: refused whatever allows or approves them, journaled with the
 * pattern, counted as crossings; operators' are journaled, rebuilt on restart and revocable.
 */
const up = await startUpstream();
const up2 = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENTS = ['agent-1', 'agent-2'].map((id) => ({ id, token: `${id}-token-0123456789abcdef` }));
const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);
const basic = (i: number) =>
  `Basic ${Buffer.from(`${AGENTS[i]!.id}:${AGENTS[i]!.token}`).toString('base64')}`;
const UP = `127.0.0.1:${up.port}`;
const UP2 = `127.0.0.1:${up2.port}`;
const SECRET = `GET http://${UP}/secret/`;
const cwd = tempDir();

const gateways: TestGateway[] = [];
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.stop();
});
async function start(extra: Record<string, unknown> = {}, dir = tempDir()) {
  const g = await startTestGateway(
    {
      agents: AGENTS,
      policy: { pause: 'block' },
      network: { allow: [UP], deny: [SECRET], allowPrivate: ['127.0.0.1/32'] },
      admin: { token: ADMIN },
      ...extra,
    },
    { dir },
  );
  gateways.push(g);
  return g;
}
const op = (g: TestGateway, args: string[]) =>
  runCliAsync([...args, '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
    cwd,
    env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
  });
const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const of = <T extends JournalRecord['type']>(g: TestGateway, type: T) =>
  g.records().filter((r): r is Extract<JournalRecord, { type: T }> => r.type === type);

describe('deny patterns', () => {
  it('network.deny beats network.allow: refused, journaled with the pattern, counted', async () => {
    const g = await start();
    expect((await viaProxy(g.proxyUrl, `${up.url}/ok`, auth(0))).status).toBe(200);
    const refused = await viaProxy(g.proxyUrl, `${up.url}/secret/key`, auth(0));
    expect(refused.status).toBe(403);
    expect(refused.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(refused.body).toContain(`network.deny: ${SECRET}`);
    expect(events(g).at(-1)).toMatchObject({
      target: `${up.url}/secret/key`,
      verdict: 'REVIEW',
      count: 1,
      approved: false,
      denied: `network.deny: ${SECRET}`,
    });
    expect(up.seen.map((r) => r.url)).not.toContain('/secret/key');
    // A CONNECT the allowlist would let through blind is read instead, so the deny holds inside.
    const t = await connectTunnel(g.gw.proxy.port, UP, { 'Proxy-Authorization': basic(1) });
    expect(t.status).toBe(200);
    const ok = await roundTrip(t.socket, `GET /fine HTTP/1.1\r\nHost: ${UP}\r\n\r\n`, (s) =>
      s.includes('"/fine"'),
    );
    expect(ok.got).toContain('200 OK');
    const no = await roundTrip(t.socket, `GET /secret/x HTTP/1.1\r\nHost: ${UP}\r\n\r\n`, (s) =>
      s.includes('\r\n\r\n'),
    );
    expect(no.got).toMatch(/^HTTP\/1\.1 403/);
    t.socket.destroy();
    expect(up.seen.map((r) => r.url)).not.toContain('/secret/x');
  });

  it('trajgate deny-pattern beats an operator approval: tunnels close, crossings count, another session is unaffected; revocable, rebuilt on restart', async () => {
    const dir = tempDir();
    const g = await start({}, dir);
    const api = adminClient(g.gw.admin.port, ADMIN);
    expect((await api.post('/api/approvals', { pattern: UP2 })).status).toBe(201);
    expect((await viaProxy(g.proxyUrl, `${up2.url}/before`, auth(0))).status).toBe(200);
    const t = await connectTunnel(g.gw.proxy.port, UP2, { 'Proxy-Authorization': basic(0) });
    expect(t.status).toBe(200);
    const closed = new Promise<void>((r) => t.socket.once('close', () => r()));

    const added = await op(g, ['deny-pattern', UP2, '--session', 'agent-1']);
    expect(added.stderr).toBe('');
    const id = /\(id (d\d+);/.exec(added.stdout)?.[1] as string;
    expect(added.stdout).toBe(
      `added deny pattern ${UP2} for agent-1 (id ${id}; undo: trajgate revoke ${id}); 1 open tunnel(s) to it closed\n`,
    );
    await closed;
    expect(of(g, 'deny-pattern')).toEqual([
      expect.objectContaining({ session: 'agent-1', pattern: UP2, by: 'operator' }),
    ]);
    const reason = `blocked by an operator (${id}): ${UP2}`;
    expect(of(g, 'tunnel').at(-1)).toMatchObject({
      change: 'closed',
      reason: `${reason} refuses it now (a deny pattern was added after it was admitted)`,
    });
    expect((await viaProxy(g.proxyUrl, `${up2.url}/one`, auth(0))).status).toBe(403);
    const second = await viaProxy(g.proxyUrl, `${up2.url}/two`, auth(0));
    expect(second.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    expect(
      events(g)
        .slice(-2)
        .map((e) => [e.verdict, e.count, e.denied]),
    ).toEqual([
      ['REVIEW', 1, reason],
      ['PAUSE', 2, reason],
    ]);
    expect((await viaProxy(g.proxyUrl, `${up2.url}/other`, auth(1))).status).toBe(200);

    const denies = (await api.get('/api/denies')).json.denies;
    expect(denies).toEqual([
      {
        id: 'cd1',
        pattern: SECRET,
        session: null,
        origin: 'config',
        source: 'network.deny',
        by: null,
      },
      {
        id,
        pattern: UP2,
        session: 'agent-1',
        origin: 'operator',
        source: 'operator',
        by: 'operator',
      },
    ]);
    expect((await api.get('/api/sessions/agent-1')).json.denies).toEqual(denies);
    expect((await api.get('/api/sessions/agent-2')).json.denies).toEqual([denies[0]]);
    const config = await api.call('DELETE', '/api/denies/cd1');
    expect([config.status, config.json.error.code]).toEqual([409, 'E_CONFIG_APPROVAL']);
    const unknown = await api.call('DELETE', '/api/denies/d999');
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'E_UNKNOWN_APPROVAL']);

    // rebuilt from the journal on restart
    await g.stop();
    gateways.splice(0);
    const g2 = await start({}, dir);
    const api2 = adminClient(g2.gw.admin.port, ADMIN);
    expect((await api2.get('/api/denies')).json.denies).toEqual(denies);
    await api2.post('/api/sessions/agent-1/resume', { reset: true });
    expect((await viaProxy(g2.proxyUrl, `${up2.url}/still`, auth(0))).status).toBe(403);
    const revoked = await op(g2, ['revoke', id]);
    expect(revoked.stdout).toBe(`revoked ${id} (${UP2} for agent-1)\n`);
    expect((await viaProxy(g2.proxyUrl, `${up2.url}/again`, auth(0))).status).toBe(200);
  });

  it('a global deny from the API; with review: pass a denied request is still refused', async () => {
    const g = await start({ policy: { pause: 'block', review: 'pass' } });
    const api = adminClient(g.gw.admin.port, ADMIN);
    const add = await api.post('/api/denies', { pattern: UP });
    expect(add.status).toBe(201);
    expect(add.json.deny).toMatchObject({ pattern: UP, session: null, origin: 'operator' });
    expect((await viaProxy(g.proxyUrl, `${up.url}/passed`, auth(1))).status).toBe(403);
    expect(up.seen.map((r) => r.url)).not.toContain('/passed');
    const bad = await api.post('/api/denies', { pattern: 'GETT http://x/' });
    expect([bad.status, bad.json.error.code]).toEqual([400, 'E_PATTERN_INVALID']);
    const empty = await api.post('/api/sessions/agent-1/denies', {});
    expect([empty.status, empty.json.error.code]).toEqual([400, 'E_BAD_FIELD']);
  });

  it('the old names, trajgate block and POST /api/sessions/:id/block, work as the new ones', async () => {
    const g = await start();
    const api = adminClient(g.gw.admin.port, ADMIN);
    const old = await op(g, ['block', `GET http://${UP}/old/`, '--session', 'agent-1']);
    expect(old.stderr).toBe(
      'trajgate: "block" is now "deny-pattern"; the old name goes in the next minor version\n',
    );
    const id = /\(id (d\d+);/.exec(old.stdout)?.[1] as string;
    expect(old.stdout).toBe(
      `added deny pattern GET http://${UP}/old/ for agent-1 (id ${id}; undo: trajgate revoke ${id})\n`,
    );
    expect(old.status).toBe(0);
    const help = await op(g, ['block', '--help']);
    expect(help.stdout).toBe((await op(g, ['deny-pattern', '--help'])).stdout);
    const [byOld, byNew] = [
      await api.post('/api/sessions/agent-2/block', { pattern: `GET http://${UP}/a/` }),
      await api.post('/api/sessions/agent-2/denies', { pattern: `GET http://${UP}/b/` }),
    ];
    expect([byOld.status, byNew.status]).toEqual([201, 201]);
    const shape = (d: { id: string; pattern: string }) => ({ ...d, id: 'd', pattern: 'p' });
    expect(shape(byOld.json.deny)).toEqual(shape(byNew.json.deny));
    expect(of(g, 'deny-pattern').map((r) => [r.session, r.pattern])).toEqual([
      ['agent-1', `GET http://${UP}/old/`],
      ['agent-2', `GET http://${UP}/a/`],
      ['agent-2', `GET http://${UP}/b/`],
    ]);
    expect((await viaProxy(g.proxyUrl, `${up.url}/old/x`, auth(0))).status).toBe(403);
    expect((await viaProxy(g.proxyUrl, `${up.url}/a/x`, auth(1))).status).toBe(403);
  });
});
