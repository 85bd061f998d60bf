import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, exchange, roundTrip, startEchoServer } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import type { RefusalRecord } from '../../src/journal/records.js';

/** Slow headers, proxy credentials and the per-session tunnel limit; loopback only. */
const upstream = await startUpstream();
const echo = await startEchoServer();
const TOKEN = 'agent-1-secret-token-0123456789';
const WRONG = 'not-the-token-but-long-enough';

const { start, keep } = gatewayPerTest({
  network: {
    allow: [`127.0.0.1:${upstream.port}`, `127.0.0.1:${echo.port}`],
    allowPrivate: ['127.0.0.1/32'],
  },
});

function refusals(g: TestGateway): RefusalRecord[] {
  return g.records().filter((r): r is RefusalRecord => r.type === 'refusal');
}

describe('slow headers', () => {
  it('one byte every 300 ms with limits.headerTimeout 1s → 408 in < 5 s, one refusal', async () => {
    const g = await start({ limits: { headerTimeout: '1s' } });
    const text = `GET ${upstream.url}/slow HTTP/1.1\r\nHost: x\r\nX-Slow: ${'s'.repeat(40)}\r\n\r\n`;
    const res = await exchange(g.gw.proxy.port, [...text], { gapMs: 300, timeoutMs: 8_000 });
    expect(res.text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(res.closed).toBe(true);
    expect(res.ms).toBeGreaterThanOrEqual(900);
    expect(res.ms).toBeLessThan(5_000);
    expect(upstream.seen.some((r) => r.url === '/slow')).toBe(false);
    // The gateway reads this connection's close (already queued when exchange resolved) before
    // it answers a later connection: a second refusal for that close would be journaled by now.
    expect((await curl(['-x', g.proxyUrl, `${upstream.url}/after`])).status).toBe(200);
    const list = refusals(g);
    expect(list[0]).toMatchObject({ status: 408, reason: 'request headers not received in time' });
    // After the 408 the parser reports the close as another error; it must not be journaled twice.
    expect(list.map((r) => r.status)).toEqual([408]);
  });
});

describe('proxy credentials (agents configured)', () => {
  const agents = { agents: [{ id: 'agent-1', token: TOKEN }] };
  const basic = (user: string, pass: string) =>
    `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const MISSING = 'proxy credentials required (agent id and token)';
  const WRONG_ID = 'wrong agent id or token';
  const rows: { name: string; mode: 'http' | 'connect'; auth: string | null; reason: string }[] = [
    { name: 'HTTP, missing', mode: 'http', auth: null, reason: MISSING },
    { name: 'HTTP, wrong token', mode: 'http', auth: basic('agent-1', WRONG), reason: WRONG_ID },
    {
      name: 'HTTP, unknown agent with the real token',
      mode: 'http',
      auth: basic('agent-9', TOKEN),
      reason: WRONG_ID,
    },
    {
      name: 'HTTP, Bearer scheme',
      mode: 'http',
      auth: `Bearer ${TOKEN}`,
      reason: 'proxy credentials must use the Basic scheme',
    },
    { name: 'CONNECT, missing', mode: 'connect', auth: null, reason: MISSING },
    {
      name: 'CONNECT, wrong token',
      mode: 'connect',
      auth: basic('agent-1', WRONG),
      reason: WRONG_ID,
    },
  ];

  it.each(rows)(
    '$name → 407 Proxy-Authenticate, nothing sent, token not journaled',
    async (row) => {
      const g = await start(agents);
      const before = { up: upstream.connections, echo: echo.connections };
      const headers: Record<string, string> = row.auth ? { 'proxy-authorization': row.auth } : {};
      let status: number;
      let challenge: string | undefined;
      if (row.mode === 'http') {
        const h = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
        const res = await curl([...h, '-x', g.proxyUrl, `${upstream.url}/secret`]);
        status = res.status;
        challenge = res.headers['proxy-authenticate'];
      } else {
        const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${echo.port}`, headers);
        keep(t);
        status = t.status;
        challenge = t.headers['proxy-authenticate'];
      }
      expect(status).toBe(407);
      expect(challenge).toBe('Basic realm="trajgate"');
      expect(upstream.connections).toBe(before.up);
      expect(echo.connections).toBe(before.echo);
      expect(refusals(g)).toMatchObject([{ status: 407, reason: row.reason }]);
      expect(g.records().filter((r) => r.type === 'event')).toHaveLength(0);
      const journal = readFileSync(g.journalPath, 'utf8');
      for (const secret of [TOKEN, WRONG, row.auth?.slice(6)].filter(Boolean)) {
        expect(journal).not.toContain(secret);
      }
    },
  );

  it('control: the right token opens the tunnel', async () => {
    const g = await start(agents);
    const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${echo.port}`, {
      'proxy-authorization': basic('agent-1', TOKEN),
    });
    keep(t);
    expect(t.status).toBe(200);
    expect((await roundTrip(t.socket, 'ping', (s) => s === 'ping')).got).toBe('ping');
    expect(readFileSync(g.journalPath, 'utf8')).not.toContain(TOKEN);
  });
});

describe('limits.tunnelsPerSession', () => {
  it('two open tunnels are fine, a third is 429, and closing one frees its slot', async () => {
    const g = await start({ limits: { tunnelsPerSession: 2 } });
    const open = async (label: string) => {
      const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${echo.port}`);
      keep(t);
      if (t.status === 200) {
        const { got } = await roundTrip(t.socket, label, (s) => s === label);
        expect(got).toBe(label);
      }
      return t;
    };
    const base = echo.connections;
    const first = await open('one');
    const second = await open('two');
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await open('three');
    expect(third.status).toBe(429);
    expect(third.rest).toContain('too many open tunnels for this session (limit 2)');
    expect(echo.connections).toBe(base + 2);
    expect(refusals(g)).toMatchObject([{ status: 429, session: '127.0.0.1', method: 'CONNECT' }]);

    // Close the first; once its outcome is journaled its slot is free again.
    const firstEvent = g.records().find((r) => r.type === 'event');
    first.socket.destroy();
    await waitFor(() => g.records().some((r) => r.type === 'outcome' && r.rid === firstEvent?.seq));
    const fourth = await open('four');
    expect(fourth.status).toBe(200);
    expect(echo.connections).toBe(base + 3);
  });
});
