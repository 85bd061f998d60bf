import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ConfigRecord, TunnelRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import { spawnGateway, writeConfig } from '../helpers/child-gateway.js';
import { runCliAsync } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import { fillDisk } from '../helpers/full-disk.js';
import { readRecords } from '../helpers/gateway.js';
import type { FileGateway } from '../helpers/file-gateway.js';
import { fileGateway as startFileGateway } from '../helpers/file-gateway.js';
import { connectTunnel, roundTrip, startEchoServer } from '../helpers/raw.js';
import { makeLocalCa } from '../helpers/tls.js';
import { startUpstream, TEST_CA_PATH } from '../helpers/upstream.js';
import { tempDir } from '../helpers/tmp.js';

/** Config reload by the admin API: what changes, what stays, what a bad file does. Loopback only. */
const upstream = await startUpstream();
const other = await startUpstream();
const echo = await startEchoServer();
const ADMIN = 'admin-token-for-reload-0123456789';
const TOKEN_A = 'agent-a-token-0123456789abcdef';
const TOKEN_B = 'agent-a-new-token-0123456789abc';

const fileGateway = (extra: Record<string, unknown>) => startFileGateway(ADMIN, extra);

const network = (allow: string[]) => ({ network: { allow, allowPrivate: ['127.0.0.1/32'] } });
const get = (g: FileGateway, url: string, auth = '') =>
  curl(['-x', `http://${auth}127.0.0.1:${g.gw.proxy.port}`, url]);
const reload = (g: FileGateway) => adminClient(g.gw.admin.port, ADMIN).post('/api/reload', {});
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('POST /api/reload', () => {
  it('an allowlist change takes effect; counts survive; a config record carries the hash', async () => {
    const g = await fileGateway(network([]));
    expect((await get(g, `${upstream.url}/before`)).status).toBe(403);
    expect(g.gw.guard.session('127.0.0.1')?.counts.size).toBe(1);
    g.write(network([`127.0.0.1:${upstream.port}`]));
    const res = await reload(g);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ reloaded: true, sha256: sha(g.file), restartNeeded: [] });
    expect((await get(g, `${upstream.url}/after`)).status).toBe(200);
    expect(upstream.seen.some((r) => r.url === '/after')).toBe(true);
    // The REVIEW before the reload still counts: the next unapproved request pauses.
    expect((await get(g, `${other.url}/x`)).headers['x-trajgate-verdict']).toMatch(/^PAUSE/);
    const config = g.records().filter((r): r is ConfigRecord => r.type === 'config');
    expect(config).toEqual([
      expect.objectContaining({ file: g.file, sha256: sha(g.file), by: 'operator' }),
    ]);
  });

  it('an invalid file is refused with its errors and the running config is kept', async () => {
    const g = await fileGateway(network([`127.0.0.1:${upstream.port}`]));
    writeFileSync(g.file, readFileSync(g.file, 'utf8') + 'netwrk: {}\n');
    const res = await reload(g);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('E_CONFIG_INVALID');
    expect(res.json.error.message).toMatch(/running config was kept/);
    expect(res.json.error.details.join('\n')).toMatch(/netwrk: unknown key/);
    expect((await get(g, `${upstream.url}/still`)).status).toBe(200);
    expect(g.records().some((r) => r.type === 'config')).toBe(false);
  });

  it("a workspace holding trajgate's data is refused, naming both; the running config is kept", async () => {
    const g = await fileGateway(network([`127.0.0.1:${upstream.port}`]));
    const data = dirname(g.journal);
    g.write({ ...network([`127.0.0.1:${upstream.port}`]), workspace: dirname(data) });
    const res = await reload(g);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({
      code: 'E_CONFIG_INVALID',
      message: `${g.file}: trajgate's data and a workspace overlap; the running config was kept`,
    });
    expect(res.json.error.details).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${g.file}:\\d+:\\d+: journal\\.path: the journal's folder ${data} is inside the workspace ${dirname(data)} \\(workspace\\), where the agent could read or rewrite it: move one of them$`,
        ),
      ),
    );
    expect(g.gw.config.workspace).not.toBe(dirname(data));
    expect(g.records().some((r) => r.type === 'config')).toBe(false);
  });

  it('a paused session stays paused and operator approvals stay', async () => {
    const g = await fileGateway(network([]));
    const admin = adminClient(g.gw.admin.port, ADMIN);
    await get(g, `${upstream.url}/1`);
    await get(g, `${upstream.url}/2`);
    expect(g.gw.guard.session('127.0.0.1')?.pausedAt).toBeTypeOf('number');
    const approved = await admin.post('/api/approvals', { pattern: `127.0.0.1:${other.port}` });
    expect(approved.status).toBe(201);
    g.write({ ...network([]), policy: { pause: 'block', holdTimeout: '20s' } });
    expect((await reload(g)).status).toBe(200);
    expect(g.gw.guard.session('127.0.0.1')?.pausedAt).toBeTypeOf('number');
    const list = (await admin.get('/api/approvals')).json.approvals as { pattern: string }[];
    expect(list.map((a) => a.pattern)).toContain(`127.0.0.1:${other.port}`);
    expect(g.gw.config.policy.holdTimeout).toBe(20_000);
  });

  it('a tunnel the new allowlist no longer covers is closed, with a tunnel record', async () => {
    const g = await fileGateway(network([`127.0.0.1:${echo.port}`]));
    const tunnel = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${echo.port}`);
    expect(tunnel.status).toBe(200);
    expect((await roundTrip(tunnel.socket, 'ping', (got) => got.includes('ping'))).got).toBe(
      'ping',
    );
    const closed = new Promise<void>((r) => tunnel.socket.once('close', () => r()));
    g.write(network([]));
    const res = await reload(g);
    expect(res.json.closed).toBe(1);
    await closed;
    const records = g.records().filter((r): r is TunnelRecord => r.type === 'tunnel');
    expect(records.at(-1)).toMatchObject({ change: 'closed', target: `127.0.0.1:${echo.port}` });
    expect(records.at(-1)?.reason).toMatch(/config reloaded/);
  });

  it('agents and their tokens are replaced; listener changes are reported, not applied', async () => {
    const agent = (token: string, admin = '127.0.0.1:0', socks?: string) => ({
      ...network([`127.0.0.1:${upstream.port}`]),
      agents: [{ id: 'agent-a', token }],
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin, ...(socks ? { socks } : {}) },
    });
    const g = await fileGateway(agent(TOKEN_A));
    expect((await get(g, `${upstream.url}/a`, `agent-a:${TOKEN_A}@`)).status).toBe(200);
    g.write(agent(TOKEN_B, '127.0.0.1:1', '127.0.0.1:0'));
    const res = await reload(g);
    expect(res.json.restartNeeded).toEqual(['listen.admin', 'listen.socks']);
    // Not listening: listen.socks takes a restart.
    expect(g.gw.socks).toBeNull();
    expect((await get(g, `${upstream.url}/a`, `agent-a:${TOKEN_A}@`)).status).toBe(407);
    expect((await get(g, `${upstream.url}/b`, `agent-a:${TOKEN_B}@`)).status).toBe(200);
    // Still answering where it listened.
    expect((await adminClient(g.gw.admin.port, ADMIN).get('/api/health')).status).toBe(200);
  });

  it('a reload the journal cannot record changes nothing (503)', async () => {
    const g = await fileGateway(network([]));
    g.write(network([`127.0.0.1:${upstream.port}`]));
    const restore = fillDisk(g.journal);
    try {
      const res = await reload(g);
      expect(res.status).toBe(503);
      expect(res.json.error.code).toBe('E_JOURNAL_WRITE');
    } finally {
      restore();
    }
    expect(g.gw.config.network.allow).toEqual([]);
    expect((await get(g, `${upstream.url}/refused`)).status).toBe(403);
  });
});

describe('trajgate reload', () => {
  const cli = (g: FileGateway) =>
    runCliAsync(['reload', '--admin', `http://127.0.0.1:${g.gw.admin.port}`], {
      env: { TRAJGATE_ADMIN_TOKEN: ADMIN },
    });

  it('applies a changed agent allowlist; a bad file exits 1 naming its errors', async () => {
    const agents = (allow: string[]) => ({
      ...network([]),
      agents: [
        { id: 'agent-a', token: TOKEN_A, allow },
        { id: 'agent-b', token: TOKEN_B },
      ],
    });
    const g = await fileGateway(agents([]));
    expect((await get(g, `${upstream.url}/a1`, `agent-a:${TOKEN_A}@`)).status).toBe(403);
    g.write(agents([`127.0.0.1:${upstream.port}`]));
    const ok = await cli(g);
    expect(ok.stdout).toMatch(/^reloaded the config \(sha256 [0-9a-f]{12}…; 0 tunnel/);
    expect(ok.status).toBe(0);
    expect((await get(g, `${upstream.url}/a2`, `agent-a:${TOKEN_A}@`)).status).toBe(200);
    expect((await get(g, `${upstream.url}/b`, `agent-b:${TOKEN_B}@`)).status).toBe(403);
    writeFileSync(g.file, readFileSync(g.file, 'utf8').replace('agent-b', 'agent b'));
    const bad = await cli(g);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/400 .*running config was kept/);
    expect(bad.stderr).toMatch(/trajgate\.yaml:\d+:\d+: agents\.1\.id|agents\[1\]\.id/);
    expect((await get(g, `${upstream.url}/a3`, `agent-a:${TOKEN_A}@`)).status).toBe(200);
  });
});

describe('tls.intercept by reload', () => {
  it('a host added to tls.intercept is intercepted from the next CONNECT on', async () => {
    const ca = makeLocalCa();
    const tlsUp = await startUpstream({ tls: true });
    const origin = `https://127.0.0.1:${tlsUp.port}`;
    const keys = (intercept: string[]) => ({
      network: { allow: [`GET ${origin}/`], allowPrivate: ['127.0.0.1/32'], ports: [tlsUp.port] },
      tls: { ca: ca.dir, upstreamCa: [TEST_CA_PATH], intercept },
    });
    const g = await fileGateway(keys([]));
    const viaProxy = () =>
      curl(['-x', `http://127.0.0.1:${g.gw.proxy.port}`, '--cacert', ca.certPath, `${origin}/in`]);
    // Blind, a GET pattern cannot be checked: refused at the CONNECT.
    expect((await viaProxy()).status).toBe(403);
    g.write(keys([`127.0.0.1:${tlsUp.port}`]));
    expect((await reload(g)).status).toBe(200);
    const res = await viaProxy();
    expect(res.status).toBe(200);
    expect(tlsUp.seen.some((r) => r.url === '/in')).toBe(true);
  });
});

describe('SIGHUP', () => {
  it('re-reads the file as `trajgate start` runs; a bad file is refused and the old one runs on', async () => {
    const base = { policy: { pause: 'block' } };
    const { cli, journal, proxy } = await spawnGateway({ ...base, ...network([]) });
    const dir = dirname(journal);
    const workspace = tempDir('trajgate-ws-');
    const rewrite = (extra: Record<string, unknown>) =>
      writeConfig(dir, {
        version: 1,
        workspace,
        journal,
        listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
        ...base,
        ...extra,
      });
    const via = (url: string) => curl(['-x', `http://127.0.0.1:${proxy}`, url]);
    expect((await via(`${upstream.url}/hup-before`)).status).toBe(403);
    const file = rewrite(network([`127.0.0.1:${upstream.port}`]));
    cli.child.kill('SIGHUP');
    await cli.waitFor(/config reloaded from .*trajgate\.yaml/);
    expect((await via(`${upstream.url}/hup-after`)).status).toBe(200);
    writeFileSync(file, 'version: 2\n');
    cli.child.kill('SIGHUP');
    const out = await cli.waitFor(/reload refused, running config kept[^\n]*\n[^\n]*version/);
    expect(out).toMatch(/trajgate\.yaml:1:\d+: version/);
    expect((await via(`${upstream.url}/hup-kept`)).status).toBe(200);
    // The REVIEW from before both reloads still counts.
    expect((await via(`${other.url}/hup`)).headers['x-trajgate-verdict']).toMatch(/^PAUSE/);
    const by = readRecords(journal)
      .filter((r): r is ConfigRecord => r.type === 'config')
      .map((r) => r.by);
    expect(by).toEqual(['SIGHUP']);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  });
});
