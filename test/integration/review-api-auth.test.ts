import { describe, expect, it } from 'vitest';
import { agentAuth, viaProxy } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import { ADMIN, AGENTS, auth, reviewStage } from '../helpers/review-story.js';

/**
 * The admin API's guards: bearer tokens (401), the admin port refused through the proxy, and
 * /metrics. Loopback only: `allowed` is allowlisted, `other` is not.
 */
const { allowed, start, pause } = await reviewStage();

describe('admin tokens', () => {
  it('wrong or missing admin token → 401 with WWW-Authenticate, and nothing changes', async () => {
    const [g, api] = await start();
    const { held } = await pause(g, api, 0);
    const lines = g.records().length;
    const cases = [
      { token: null },
      { token: 'wrong-token-0123456789abcdef' },
      { token: '' },
      { headers: { authorization: `Basic ${Buffer.from(`x:${ADMIN}`).toString('base64')}` } },
      { headers: { authorization: `Bearer ${ADMIN} extra` } },
    ];
    for (const c of cases) {
      const opts = 'headers' in c ? { token: null, headers: c.headers } : { token: c.token };
      for (const [method, path] of [
        ['GET', '/api/sessions'],
        ['POST', '/api/sessions/agent-1/resume'],
        ['POST', '/api/sessions/agent-1/deny'],
        ['POST', '/api/approvals'],
        ['GET', '/metrics'],
      ] as const) {
        const res = await api.call(method, path, { ...opts, body: { pattern: 'x.example' } });
        expect(res.status, `${method} ${path} ${JSON.stringify(c)}`).toBe(401);
        expect(res.headers['www-authenticate']).toBe('Bearer realm="trajgate admin"');
        expect(res.json.error.code).toBe('E_UNAUTHORIZED');
      }
    }
    expect(g.records()).toHaveLength(lines);
    const detail = await api.get('/api/sessions/agent-1');
    expect(detail.json).toMatchObject({ state: 'paused', held: 1 });
    expect((await api.get('/api/approvals')).json.approvals).toHaveLength(1); // the allowlist
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
  });
});

describe('the admin port through the proxy', () => {
  it('is refused 403 even when allowPrivate and approvals name it', async () => {
    const agents = [...AGENTS, { id: 'agent-3', token: 'agent-3-token-0123456789abcdef' }];
    const [g, api] = await start({
      agents,
      network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.0/8'] },
    });
    // Its port is known once it listens (port 0): approved then, as an allow pattern would.
    const adminPort = g.gw.admin.port;
    for (const host of ['127.0.0.1', '127.0.0.2']) {
      const approve = await api.post('/api/approvals', { pattern: `${host}:${adminPort}` });
      expect(approve.status).toBe(201);
    }
    const bearer = ['-H', `Authorization: Bearer ${ADMIN}`];
    // one request per session: a refused crossing counts, and a second one would pause it
    const plain = await curl([
      ...auth(0),
      '-x',
      g.proxyUrl,
      ...bearer,
      `http://127.0.0.1:${adminPort}/api/sessions`,
    ]);
    expect(plain.status).toBe(403);
    expect(plain.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(plain.body).not.toContain('"sessions"');
    const other2 = await curl([
      ...agentAuth('agent-3', agents[2]!.token),
      '-x',
      g.proxyUrl,
      ...bearer,
      '-X',
      'POST',
      `http://127.0.0.2:${adminPort}/api/approvals`,
      '-d',
      '{"pattern":"evil.example"}',
    ]);
    expect(other2.status).toBe(403);
    const tunnel = await curl([
      ...auth(1),
      '-p',
      '-x',
      g.proxyUrl,
      ...bearer,
      `http://127.0.0.1:${adminPort}/metrics`,
    ]);
    expect(tunnel.exitCode).not.toBe(0);
    expect(tunnel.stderr).toContain('403');
    const events = g.records().filter((r) => r.type === 'event');
    expect(events.map((r) => [r.session, r.verdict])).toEqual([
      ['agent-1', 'REVIEW'],
      ['agent-3', 'REVIEW'],
      ['agent-2', 'REVIEW'],
    ]);
    expect(events.map((r) => r.type === 'event' && r.denied)).toEqual([
      `trajgate's own port (127.0.0.1:${adminPort})`,
      `trajgate's own port (127.0.0.2:${adminPort})`,
      `trajgate's own port (127.0.0.1:${adminPort})`,
    ]);
    // the agent's POST never reached the admin API
    expect(
      (await api.get('/api/approvals')).json.approvals.map((a: { pattern: string }) => a.pattern),
    ).not.toContain('evil.example');
  });
});

describe('/metrics', () => {
  it('Prometheus text: events by source/kind/verdict, held, paused, journal write latency', async () => {
    const [g, api] = await start();
    await viaProxy(g.proxyUrl, `${allowed.url}/m`, auth(0));
    const { held } = await pause(g, api, 0);
    const res = await api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const metric = (line: string) => res.text.split('\n').find((l) => l.startsWith(line));
    expect(metric('trajgate_events_total{source="proxy",kind="network",verdict="ALLOW"}')).toMatch(
      / 1$/,
    );
    expect(metric('trajgate_events_total{source="proxy",kind="network",verdict="REVIEW"}')).toMatch(
      / 1$/,
    );
    expect(metric('trajgate_events_total{source="proxy",kind="network",verdict="PAUSE"}')).toMatch(
      / 1$/,
    );
    expect(metric('trajgate_held_requests ')).toBe('trajgate_held_requests 1');
    expect(metric('trajgate_paused_sessions ')).toBe('trajgate_paused_sessions 1');
    expect(Number(metric('trajgate_journal_write_seconds_count ')?.split(' ')[1])).toBeGreaterThan(
      0,
    );
    expect(res.text).toContain('# TYPE trajgate_journal_write_seconds histogram');
    await api.post('/api/sessions/agent-1/deny');
    await held;
    const after = await api.get('/metrics');
    expect(after.text).toMatch(/^trajgate_held_requests 0$/m);
    expect(after.text).toMatch(/^trajgate_paused_sessions 1$/m);
  });
});
