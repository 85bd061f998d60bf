import { describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import {
  connectTunnel,
  refusingPort,
  openRaw,
  roundTrip,
  startResettingServer,
  startSilentServer,
  startUpgradeServer,
} from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';

/** Upstream failures (502 / 504 / reset) and HTTP upgrades, all on loopback. */
const nothing = await refusingPort();
const silent = await startSilentServer();
const resetting = await startResettingServer();
const ws = await startUpgradeServer();
const wsOther = await startUpgradeServer();
const TOKEN = 'agent-1-secret-token-0123456789';

const ports = [nothing, silent.port, resetting.port, ws.port];
const { start, keep } = gatewayPerTest({
  network: { allow: ports.map((p) => `127.0.0.1:${p}`), allowPrivate: ['127.0.0.1/32'] },
  limits: { upstreamTimeout: '1s' },
});

/** The request's event and, once journaled, its outcome. */
async function outcomeOf(g: TestGateway): Promise<{ event: EventRecord; outcome: OutcomeRecord }> {
  let found: { event: EventRecord; outcome: OutcomeRecord } | undefined;
  await waitFor(() => {
    const records = g.records();
    const event = records.find((r): r is EventRecord => r.type === 'event');
    const outcome = records.find(
      (r): r is OutcomeRecord => r.type === 'outcome' && r.rid === event?.seq,
    );
    if (event && outcome) found = { event, outcome };
    return found !== undefined;
  });
  return found as { event: EventRecord; outcome: OutcomeRecord };
}

describe('upstream failures', () => {
  const rows = [
    {
      name: 'nothing listens (HTTP)',
      port: () => nothing,
      status: 502,
      reason: () => `trajgate: upstream 127.0.0.1:${nothing} refused the connection\n`,
    },
    {
      name: 'accepts, never answers, upstreamTimeout 1s (HTTP)',
      port: () => silent.port,
      status: 504,
      reason: () => `trajgate: upstream 127.0.0.1:${silent.port} timed out\n`,
    },
  ];

  it.each(rows)('$name → $status with a one-line reason', async (row) => {
    const g = await start();
    const started = Date.now();
    const res = await curl(['-x', g.proxyUrl, `http://127.0.0.1:${row.port()}/x`]);
    expect(res.status).toBe(row.status);
    expect(res.body).toBe(row.reason());
    expect(Date.now() - started).toBeLessThan(5_000);
    const { event, outcome } = await outcomeOf(g);
    expect(event.verdict).toBe('ALLOW');
    expect(outcome).toMatchObject({ status: row.status, error: row.reason().slice(10, -1) });
  });

  it('nothing listens (CONNECT) → 502 on the CONNECT itself', async () => {
    const g = await start();
    const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${nothing}`);
    keep(t);
    expect(t.status).toBe(502);
    expect(t.rest).toBe(`trajgate: upstream 127.0.0.1:${nothing} refused the connection\n`);
    const { outcome } = await outcomeOf(g);
    expect(outcome).toMatchObject({ status: 502, bytesUp: 0, bytesDown: 0 });
    expect(outcome.error).toContain('refused the connection');
  });

  it('reset mid-response (HTTP) → the client sees a truncated response, outcome has an error', async () => {
    const g = await start();
    const res = await curl(['-x', g.proxyUrl, `http://127.0.0.1:${resetting.port}/r`]);
    expect(res.status).toBe(200); // the head had already been passed on
    expect(res.exitCode).not.toBe(0); // curl: transfer closed with bytes remaining
    expect(res.body.length).toBeLessThan(1000);
    const { outcome } = await outcomeOf(g);
    expect(outcome.status).toBe(200);
    expect(outcome.error).toEqual(expect.any(String));
    expect(outcome.bytesDown).toBeLessThan(1000);
  });

  it('reset mid-response (CONNECT) → the tunnel closes early, outcome has an error', async () => {
    const g = await start();
    const t = await connectTunnel(g.gw.proxy.port, `127.0.0.1:${resetting.port}`);
    keep(t);
    expect(t.status).toBe(200);
    const { got, closed } = await roundTrip(t.socket, 'GET /r HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(closed).toBe(true);
    expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly part/);
    const { outcome } = await outcomeOf(g);
    expect(outcome.status).toBe(200);
    expect(outcome.error).toEqual(expect.any(String));
  });
});

describe('HTTP upgrade (WebSocket-style) through the proxy', () => {
  const upgrade = (port: number, extra = '') =>
    `GET http://127.0.0.1:${port}/ws?room=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

  it('an allowed target answers 101 and echoes bytes both ways', async () => {
    const g = await start({ agents: [{ id: 'agent-1', token: TOKEN }] });
    const auth = `Proxy-Authorization: Basic ${Buffer.from(`agent-1:${TOKEN}`).toString('base64')}\r\n`;
    const t = await openRaw(g.gw.proxy.port, upgrade(ws.port, auth));
    keep(t);
    expect(t.status).toBe(101);
    expect(t.headers.upgrade).toBe('websocket');
    for (const text of ['hello', 'through the proxy']) {
      const { got } = await roundTrip(t.socket, text, (s) => s === text);
      expect(got).toBe(text);
    }
    const seen = ws.upgrades.at(-1);
    expect(seen?.url).toBe('/ws?room=1');
    expect(seen?.headers.upgrade).toBe('websocket');
    expect(seen?.headers['proxy-authorization']).toBeUndefined();
    expect(seen?.headers.via).toBe('1.1 trajgate');
    t.socket.destroy();
    const { event, outcome } = await outcomeOf(g);
    expect(event).toMatchObject({ verdict: 'ALLOW', method: 'GET', session: 'agent-1' });
    expect(outcome.bytesDown).toBeGreaterThan(0);
  });

  it('a target that is not allowlisted → 403 REVIEW, nothing reaches it', async () => {
    const g = await start();
    const t = await openRaw(g.gw.proxy.port, upgrade(wsOther.port));
    keep(t);
    expect(t.status).toBe(403);
    expect(t.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(wsOther.connections).toBe(0);
    const { event } = await outcomeOf(g);
    expect(event).toMatchObject({
      verdict: 'REVIEW',
      target: `http://127.0.0.1:${wsOther.port}/ws?room=1`,
    });
  });
});
