import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { EventRecord, OutcomeRecord, Unstamped } from '../../src/journal/records.js';
import { QUEUE } from '../../src/telemetry/otlp.js';
import { Telemetry } from '../../src/telemetry/telemetry.js';
import { adminClient, viaProxy } from '../helpers/admin.js';
import { startChild, tempConfig } from '../helpers/child-gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { refusedPort, startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { startUpstream } from '../helpers/upstream.js';
import { isOutcome, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * Export never holds a decision up: with the collector refusing connections, or accepting and
 * never answering, requests are answered and journaled as ever (asserted on the events: each
 * answer while an export hangs unanswered), and what could not be sent is counted on /metrics.
 */
const upstream = await startUpstream();
const { start } = gatewayPerTest({
  agents: [AGENTS[0]],
  network: {
    allowPrivate: ['127.0.0.1/32'],
    ports: [upstream.port],
    allow: [`127.0.0.1:${upstream.port}`],
  },
  admin: { token: ADMIN },
});

/** A counter's value on /metrics for `signal` (0 when absent). */
async function counter(port: number, name: string, signal: string): Promise<number> {
  const text = (await adminClient(port, ADMIN).get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{signal="${signal}"}`));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

describe('telemetry.otlp with a dead collector', () => {
  it('a port that refuses: requests are answered, the failed exports counted', async () => {
    const g = await start({
      telemetry: { otlp: { endpoint: `http://127.0.0.1:${await refusedPort()}` } },
    });
    for (let i = 0; i < 3; i++)
      expect((await viaProxy(g.proxyUrl, `${upstream.url}/r${i}`, auth(0))).status).toBe(200);
    await waitForRecords(g, isOutcome, 3);
    const port = g.gw.admin.port;
    await waitFor(
      async () => (await counter(port, 'trajgate_otlp_export_failures_total', 'spans')) >= 1,
      30_000,
      'a failed span export counted',
    );
    // The session's root and the three requests' spans, in however many batches.
    await waitFor(
      async () => (await counter(port, 'trajgate_otlp_dropped_total', 'spans')) >= 4,
      30_000,
      'every span counted as dropped',
    );
    await waitFor(
      async () => (await counter(port, 'trajgate_otlp_dropped_total', 'logs')) >= 6,
      30_000,
    );
    // Backed off: what comes next is dropped before it is built, with no export tried for it.
    const failures = await counter(port, 'trajgate_otlp_export_failures_total', 'spans');
    const dropped = await counter(port, 'trajgate_otlp_dropped_total', 'spans');
    for (let i = 0; i < 20; i++)
      expect((await viaProxy(g.proxyUrl, `${upstream.url}/next${i}`, auth(0))).status).toBe(200);
    await waitForRecords(g, isOutcome, 23);
    await waitFor(
      async () => (await counter(port, 'trajgate_otlp_dropped_total', 'spans')) >= dropped + 20,
      30_000,
      'the next requests dropped',
    );
    expect(await counter(port, 'trajgate_otlp_export_failures_total', 'spans')).toBeLessThanOrEqual(
      failures + 1,
    );
  });

  it('a collector that never answers: requests are answered while its exports hang', async () => {
    const rx = await startOtlpReceiver({ hang: true });
    const g = await start({ telemetry: { otlp: { endpoint: rx.url } } });
    expect((await viaProxy(g.proxyUrl, `${upstream.url}/first`, auth(0))).status).toBe(200);
    await waitFor(() => rx.hanging.length >= 1, 20_000, 'an export held unanswered');
    for (let i = 0; i < 3; i++)
      expect((await viaProxy(g.proxyUrl, `${upstream.url}/during${i}`, auth(0))).status).toBe(200);
    expect(rx.hanging.every((res) => !res.writableEnded)).toBe(true);
    await waitForRecords(g, isOutcome, 4);
    await waitFor(
      async () =>
        (await counter(g.gw.admin.port, 'trajgate_otlp_export_failures_total', 'spans')) >= 1,
      30_000,
      'the export that timed out counted',
    );
  });

  it('a stop is held neither by an export the collector never answers nor by a refused one', async () => {
    const rx = await startOtlpReceiver({ hang: true });
    for (const endpoint of [rx.url, `http://127.0.0.1:${await refusedPort()}`]) {
      const { config } = tempConfig({
        telemetry: { otlp: { endpoint } },
        admin: { token: ADMIN },
        network: {
          allowPrivate: ['127.0.0.1/32'],
          ports: [upstream.port],
          allow: [`127.0.0.1:${upstream.port}`],
        },
      });
      const g = await startChild(config);
      expect((await viaProxy(g.proxyUrl, `${upstream.url}/before-stop`)).status).toBe(200);
      if (endpoint === rx.url)
        await waitFor(() => rx.hanging.length >= 1, 20_000, 'an export held unanswered');
      else
        await waitFor(
          async () =>
            (await counter(g.adminPort, 'trajgate_otlp_export_failures_total', 'spans')) >= 1,
          20_000,
          'a refused export counted',
        );
      // The helper SIGKILLs what has not exited 10 s after the signal: the export's own timeout.
      expect(await g.kill('SIGTERM')).toEqual({ code: 0, signal: null });
      expect(g.stderr()).toMatch(/stopped in \d+ ms/);
    }
  });

  it('past the queue, records are dropped and counted, not kept', async () => {
    const rx = await startOtlpReceiver({ hang: true });
    const registry = new Registry();
    const t = new Telemetry({ endpoint: rx.url, headers: {} }, registry, pino({ level: 'silent' }));
    let seq = 0;
    const write = (record: Unstamped<EventRecord> | Unstamped<OutcomeRecord>) => {
      seq++;
      t.written({ record, seq, ms: Date.now(), line: JSON.stringify({ seq, ...record }) });
      return seq;
    };
    /** A request: its event record, then its outcome (a span and two log records). */
    const request = () => {
      const rid = write({ ...EVENT, target: `http://127.0.0.1:9/${seq}` });
      write({ type: 'outcome', rid, session: 's', ...OUTCOME });
    };
    const dropped = async (signal: string) =>
      (await registry.getSingleMetric('trajgate_otlp_dropped_total')!.get()).values.find(
        (v) => v.labels.signal === signal,
      )?.value ?? 0;
    const extra = 100;
    // A request whose span opens before the queues fill; its outcome comes after.
    const early = write({ ...EVENT, target: 'http://127.0.0.1:9/early' });
    await new Promise((resolve) => setImmediate(resolve));
    // Read on the next turn, at once: no export can finish meanwhile (the collector never answers).
    for (let i = 0; i < QUEUE + extra; i++) request();
    await waitFor(async () => (await dropped('spans')) > 0, 20_000, 'the drops counted');
    // The session's root span took one place; each log record past the queue is dropped too
    // (the early event's took one).
    expect(await dropped('spans')).toBe(extra + 1);
    expect(await dropped('logs')).toBe(2 * (QUEUE + extra) - QUEUE + 1);
    // Both queues full: each record is dropped unread, its span and log record counted.
    for (let i = 0; i < extra; i++) request();
    expect(await dropped('spans')).toBe(2 * extra + 1);
    expect(await dropped('logs')).toBe(2 * (QUEUE + extra) - QUEUE + 1 + 2 * extra);
    // The early request's outcome, dropped unread, drops its open span too: none is kept.
    write({ type: 'outcome', rid: early, session: 's', ...OUTCOME });
    expect(await dropped('spans')).toBe(2 * extra + 2);
    await t.close();
  });
});

const EVENT = {
  type: 'event',
  session: 's',
  source: 'proxy',
  kind: 'network',
  target: '',
  method: 'GET',
  approved: false,
  verdict: 'ALLOW',
  boundary: null,
  count: 0,
  reason: 'allowed by network.allow',
} as const;
const OUTCOME = { status: 200, bytesUp: 0, bytesDown: 64, durationMs: 1 } as const;
