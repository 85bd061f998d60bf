import { readdirSync } from 'node:fs';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * A burst of pauses with a webhook receiver that accepts and never answers: 600 sessions each
 * go REVIEW then PAUSE through the proxy (policy.pause: block, notify.on: [pause, review]),
 * 1,200 notifications, while one more agent keeps using an allowlisted upstream. The receiver
 * sees exactly `connections` connections, the queue holds `queue` and the rest is dropped and
 * counted, this process's open fds (gateway, clients and receiver, both ends of each loopback
 * connection) and RSS stay bounded, the agents are answered as usual, and stop is prompt.
 */
const SESSIONS = 600;
const CLIENT_SOCKETS = 16;
const NOTIFY = { connections: 4, queue: 100 };
const ADMIN = 'burst-admin-token-0123456789';
const agents = Array.from({ length: SESSIONS + 1 }, (_, i) => ({
  id: `agent-${i}`,
  token: `burst-agent-token-${i}-0123456789`,
}));
const basic = (a: { id: string; token: string }) =>
  `Basic ${Buffer.from(`${a.id}:${a.token}`).toString('base64')}`;

/** One absolute-form GET through the proxy: status, verdict header and time taken. */
function get(agent: http.Agent, proxyPort: number, auth: string, url: string) {
  const t = performance.now();
  return new Promise<{ status: number; verdict: string; ms: number }>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: proxyPort,
      path: url,
      agent,
      headers: { host: new URL(url).host, 'proxy-authorization': auth },
      timeout: 10_000,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to ${url} within 10 s`)));
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          verdict: String(res.headers['x-trajgate-verdict'] ?? ''),
          ms: performance.now() - t,
        }),
      );
    });
    req.end();
  });
}

const fds = () => readdirSync('/proc/self/fd').length;
const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('webhook under a burst of pauses, receiver hanging', () => {
  it('bounded connections, queue, fds and RSS; agents answered as usual; stop is prompt', async () => {
    const hook = await startWebhook(null);
    const allowed = await startUpstream();
    const other = await startUpstream();
    const g = await startTestGateway({
      agents,
      policy: { pause: 'block' },
      network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
      admin: { token: ADMIN },
      notify: {
        webhook: hook.url,
        on: ['pause', 'review'],
        timeout: '60s',
        attempts: 1,
        ...NOTIFY,
      },
      limits: { drainTimeout: '1s' },
    });
    const api = adminClient(g.gw.admin.port, ADMIN);
    const proxyPort = g.gw.proxy.port;
    const burstAgent = new http.Agent({ keepAlive: true, maxSockets: CLIENT_SOCKETS });
    const steadyAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const steady = agents[SESSIONS]!;
    // warm up: the steady agent's connection and the upstream's are open before the baseline
    expect((await get(steadyAgent, proxyPort, basic(steady), `${allowed.url}/warm`)).status).toBe(
      200,
    );
    const baseFds = fds();
    const baseRss = process.memoryUsage.rss();
    let peakFds = baseFds;
    let peakRss = baseRss;
    const sampler = setInterval(() => {
      peakFds = Math.max(peakFds, fds());
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 5);

    let bursting = true;
    const steadyRuns: { status: number; ms: number }[] = [];
    const steadyLoop = (async () => {
      for (let n = 0; bursting; n++)
        steadyRuns.push(await get(steadyAgent, proxyPort, basic(steady), `${allowed.url}/s/${n}`));
    })();
    const verdicts = await Promise.all(
      agents.slice(0, SESSIONS).map(async (a) => {
        const first = await get(burstAgent, proxyPort, basic(a), `${other.url}/x/${a.id}/1`);
        const second = await get(burstAgent, proxyPort, basic(a), `${other.url}/x/${a.id}/2`);
        return [first, second].map((r) => `${r.status} ${r.verdict}`).join(', ');
      }),
    );
    bursting = false;
    await steadyLoop;
    const text = (await api.get('/metrics')).text;
    clearInterval(sampler);

    expect(new Set(verdicts)).toEqual(
      new Set(['403 REVIEW; boundary=network, 403 PAUSE; boundary=network']),
    );
    // 1,200 notifications: `connections` under way (never answered), `queue` waiting, the rest dropped
    await waitFor(() => hook.deliveries.length === NOTIFY.connections);
    expect(hook.connections).toBe(NOTIFY.connections);
    expect(hook.peakOpen).toBe(NOTIFY.connections);
    expect(metric(text, 'trajgate_webhook_queued')).toBe(NOTIFY.queue);
    expect(metric(text, 'trajgate_webhook_dropped_total')).toBe(
      2 * SESSIONS - NOTIFY.queue - NOTIFY.connections,
    );
    expect(metric(text, 'trajgate_webhook_failures_total')).toBe(0);
    // fds: both ends of each loopback connection live in this process (the unbounded notifier
    // opened one per notification: 2,400 here)
    const fdBound = 2 * (NOTIFY.connections + CLIENT_SOCKETS + 1 + 2) + 16;
    expect(peakFds - baseFds).toBeLessThanOrEqual(fdBound);
    // RSS: 1,200 pause records through the journal, 100 of them kept waiting
    expect(peakRss - baseRss).toBeLessThan(64 * 2 ** 20);
    // the agent that kept working was answered every time, never waiting on the webhook (60 s)
    expect(steadyRuns.length).toBeGreaterThan(10);
    expect(steadyRuns.every((r) => r.status === 200)).toBe(true);
    expect(Math.max(...steadyRuns.map((r) => r.ms))).toBeLessThan(2_000);

    burstAgent.destroy();
    steadyAgent.destroy();
    const t = Date.now();
    await g.stop();
    expect(Date.now() - t).toBeLessThan(2_000);
    await waitFor(() => fds() <= baseFds);
    console.log(
      `burst: fds +${peakFds - baseFds} (bound ${fdBound}), RSS +${((peakRss - baseRss) / 2 ** 20).toFixed(1)} MB,` +
        ` steady p100 ${Math.max(...steadyRuns.map((r) => r.ms)).toFixed(0)} ms over ${steadyRuns.length} requests`,
    );
  }, 60_000);
});
