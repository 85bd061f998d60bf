import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { FileGateway } from '../helpers/file-gateway.js';
import { fileGateway } from '../helpers/file-gateway.js';
import { FILE_ROUTES } from '../helpers/gateway.js';
import { startUpstream, TEST_CA_PATH } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What a reload replaces reaches the connections it governs: `limits.upstreamTimeout` and
 * `tls.upstreamCa` the bridge's reverse proxy, `tls.upstreamCa` the webhook (it used to keep
 * the values it started with). Loopback only; the HTTPS servers' certificates come from the
 * test CA, which nothing trusts unless `tls.upstreamCa` names it.
 */
const ADMIN = 'admin-token-for-reload-0123456789';
const SLOW_MS = 1_500;

/** A tool server that answers each call after SLOW_MS: slower than 300ms, faster than 30s. */
const slow = createServer((req, res) => {
  req.resume();
  const timer = setTimeout(() => res.end('{"ok":true}'), SLOW_MS);
  res.once('close', () => clearTimeout(timer));
});
await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
afterAll(() => {
  slow.closeAllConnections();
  return new Promise<void>((r) => slow.close(() => r()));
});
const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;

const reload = async (g: FileGateway) =>
  (await adminClient(g.gw.admin.port, ADMIN).post('/api/reload', {})).json;

/** A write inside the workspace through the bridge (an HTTP route): allowed, so forwarded. */
async function bridgeCall(g: FileGateway): Promise<number> {
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/fs/write`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ path: join(g.gw.config.workspace, 'a.txt'), content: 'x' }),
  });
  await res.body.dump();
  return res.statusCode;
}

describe('the bridge reverse proxy after a reload', () => {
  it('times out calls after the reloaded limits.upstreamTimeout', async () => {
    const keys = (upstreamTimeout: string) => ({
      bridge: { upstream: slowUrl, protocol: 'http', routes: FILE_ROUTES },
      limits: { upstreamTimeout },
    });
    const g = await fileGateway(ADMIN, keys('300ms'));
    expect(await bridgeCall(g)).toBe(504);
    g.write(keys('30s'));
    expect(await reload(g)).toMatchObject({ reloaded: true, restartNeeded: [] });
    expect(await bridgeCall(g)).toBe(200);
  });

  it('verifies an https upstream with the reloaded tls.upstreamCa', async () => {
    const tls = await startUpstream({ tls: true });
    const keys = (upstreamCa: string[]) => ({
      bridge: { upstream: `${tls.url}/`, protocol: 'http', routes: FILE_ROUTES },
      tls: { upstreamCa },
    });
    const g = await fileGateway(ADMIN, keys([]));
    expect(await bridgeCall(g)).toBe(502);
    expect(tls.seen).toEqual([]);
    g.write(keys([TEST_CA_PATH]));
    expect(await reload(g)).toMatchObject({ reloaded: true, restartNeeded: [] });
    expect(await bridgeCall(g)).toBe(200);
    expect(tls.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /fs/write']);
  });
});

describe('the webhook after a reload', () => {
  it('verifies an https receiver with the reloaded tls.upstreamCa', async () => {
    const receiver = await startUpstream({ tls: true });
    const target = await startUpstream();
    const keys = (upstreamCa: string[]) => ({
      notify: { webhook: `${receiver.url}/hook`, attempts: 1 },
      tls: { upstreamCa },
    });
    const g = await fileGateway(ADMIN, keys([]));
    const api = adminClient(g.gw.admin.port, ADMIN);
    const failures = async () =>
      Number(
        /^trajgate_webhook_failures_total (\d+)$/m.exec((await api.get('/metrics')).text)?.[1],
      );
    /** Unapproved requests until the session pauses (REVIEW, then PAUSE: network). */
    const pause = async () => {
      for (let i = 0; i < 3; i++) {
        const res = await curl(['-x', `http://127.0.0.1:${g.gw.proxy.port}`, `${target.url}/${i}`]);
        if (/^PAUSE/.test(res.headers['x-trajgate-verdict'] ?? '')) return;
      }
      throw new Error('the session did not pause');
    };
    await pause();
    await waitFor(async () => (await failures()) === 1, 20_000, 'the untrusted delivery failed');
    expect(receiver.seen).toEqual([]);
    g.write(keys([TEST_CA_PATH]));
    expect(await reload(g)).toMatchObject({ reloaded: true, restartNeeded: [] });
    expect((await api.post('/api/sessions/127.0.0.1/resume', {})).status).toBe(200);
    await pause();
    await waitFor(() => receiver.seen.length === 1, 20_000, 'the pause delivered');
    expect(receiver.seen[0]).toMatchObject({ method: 'POST', url: '/hook' });
    expect(JSON.parse(receiver.seen[0]!.body)).toMatchObject({
      kind: 'pause',
      session: '127.0.0.1',
    });
    expect(await failures()).toBe(1);
  });
});
