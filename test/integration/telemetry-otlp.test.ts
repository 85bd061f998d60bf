import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { adminClient, viaProxy } from '../helpers/admin.js';
import { fileGateway } from '../helpers/file-gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import type { ReceivedLog, ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { startUpstream } from '../helpers/upstream.js';
import { isOutcome, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * telemetry.otlp sends the journal to a collector over OTLP/HTTP: a real receiver on loopback
 * decodes what arrives. One trace per session (a root span, a span per request from its event
 * to its outcome, a span per pause and operator action with its span event, linked to the
 * requests by rid) and a log record per journal line, its body the line as written. Nothing
 * secret leaves: not the agent's token, not its Proxy-Authorization, not the collector's own
 * header value (that goes as a header, never in a body).
 */
const allowed = await startUpstream();
const other = await startUpstream();
const SESSION = AGENTS[0]!.id;
const OTLP_TOKEN = 'collector-token-0123456789abcdef';
process.env.TRAJGATE_TEST_OTLP_TOKEN = OTLP_TOKEN;
const proxyAuthValue = Buffer.from(`${SESSION}:${AGENTS[0]!.token}`).toString('base64');

const { start } = gatewayPerTest({
  agents: [AGENTS[0]],
  policy: { holdTimeout: '30s' },
  network: {
    allowPrivate: ['127.0.0.1/32'],
    ports: [allowed.port, other.port],
    allow: [`127.0.0.1:${allowed.port}`],
  },
  admin: { token: ADMIN },
});

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('telemetry.otlp', () => {
  it('exports one trace per session: request spans, pause and operator spans, and every record as a log', async () => {
    const rx = await startOtlpReceiver();
    const g = await start({
      telemetry: {
        otlp: {
          endpoint: `${rx.url}/`,
          headers: { authorization: 'Bearer ${TRAJGATE_TEST_OTLP_TOKEN}' },
        },
      },
    });
    const api = adminClient(g.gw.admin.port, ADMIN);
    expect((await viaProxy(g.proxyUrl, `${allowed.url}/ok`, auth(0))).status).toBe(200);
    expect((await viaProxy(g.proxyUrl, `${other.url}/first`, auth(0))).status).toBe(403);
    const held = viaProxy(g.proxyUrl, `${other.url}/held`, auth(0));
    await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
    const pause = g.records().find((r) => r.type === 'pause')!;
    const rid = pause.type === 'pause' ? pause.trigger.seq : -1;
    const once = await api.post(`/api/sessions/${SESSION}/resume`, { once: [rid] });
    expect(once.status).toBe(200);
    expect((await held).status).toBe(200);
    const approved = await api.post(`/api/sessions/${SESSION}/approve`, {
      pattern: `127.0.0.1:${other.port}`,
    });
    expect(approved.status).toBe(201);
    expect((await api.post(`/api/sessions/${SESSION}/deny`)).status).toBe(200);

    const lines = () => readFileSync(g.journalPath, 'utf8').split('\n').filter(Boolean);
    await waitFor(() => rx.logs.length >= lines().length, 20_000, 'every record as a log');
    await waitFor(() => byName(rx.spans, 'deny').length === 1, 20_000, 'the deny span');

    // Logs: every journal line, as written, with its type, session and seq.
    const written = lines();
    expect(rx.logs.map((l) => l.body)).toEqual(written);
    for (const [i, log] of rx.logs.entries()) {
      const record = JSON.parse(written[i]!) as { type: string; seq: number; session?: string };
      expect(log.attributes['trajgate.type']).toBe(record.type);
      expect(log.attributes['trajgate.seq']).toBe(record.seq);
      if (record.session !== undefined)
        expect(log.attributes['trajgate.session']).toBe(record.session);
    }
    expect(rx.logs.find((l) => l.attributes['trajgate.type'] === 'pause')!.severityText).toBe(
      'WARN',
    );

    // One trace: the session's root and everything under it.
    const [root, ...roots] = byName(rx.spans, 'session');
    expect(roots).toEqual([]);
    expect(root!.attributes['trajgate.session']).toBe(SESSION);
    expect(root!.parentSpanId).toBe('');
    for (const s of rx.spans) expect(s.traceId).toBe(root!.traceId);
    for (const s of rx.spans.filter((s) => s !== root)) expect(s.parentSpanId).toBe(root!.spanId);

    const requests = byName(rx.spans, 'request');
    expect(requests).toHaveLength(3);
    const ok = requests.find((s) => s.attributes['trajgate.target'] === `${allowed.url}/ok`)!;
    expect(ok.attributes).toMatchObject({
      'trajgate.session': SESSION,
      'trajgate.source': 'proxy',
      'trajgate.kind': 'network',
      'trajgate.verdict': 'ALLOW',
      'trajgate.decision': 'ALLOW',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'trajgate.status': 200,
    });
    expect(ok.attributes['trajgate.bytesDown']).toBeGreaterThan(0);
    expect(typeof ok.attributes['trajgate.durationMs']).toBe('number');
    expect(BigInt(ok.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(ok.startTimeUnixNano));
    const review = requests.find((s) => s.attributes['trajgate.target'] === `${other.url}/first`)!;
    expect(review.attributes).toMatchObject({
      'trajgate.verdict': 'REVIEW',
      'trajgate.boundary': 'network',
      'trajgate.decision': 'REVIEW: network',
      'trajgate.status': 403,
    });
    // The paused request: PAUSE when judged, then approved once, forwarded, 200; its events say so.
    const paused = requests.find((s) => s.attributes['trajgate.rid'] === rid)!;
    expect(paused.attributes['trajgate.target']).toBe(`${other.url}/held`);
    expect(paused.attributes['trajgate.status']).toBe(200);
    expect(paused.attributes['trajgate.approved']).toBe(true);
    expect(paused.events.map((e) => e.name)).toEqual(expect.arrayContaining(['pause', 'judged']));
    expect(paused.events.find((e) => e.name === 'judged')!.attributes['trajgate.verdict']).toBe(
      'ALLOW',
    );

    // Pause and operator actions: a span each, with its span event, linked to the requests.
    const [pauseSpan] = byName(rx.spans, 'pause');
    expect(pauseSpan!.events.map((e) => e.name)).toEqual(['pause']);
    expect(pauseSpan!.attributes).toMatchObject({ 'trajgate.boundary': 'network' });
    expect(pauseSpan!.links.map((l) => l.spanId)).toEqual([paused.spanId]);
    const [onceSpan] = byName(rx.spans, 'approve-once');
    expect(onceSpan!.events.map((e) => e.name)).toEqual(['resume']);
    expect(onceSpan!.attributes['trajgate.by']).toBe('operator');
    expect(onceSpan!.links.map((l) => l.spanId)).toEqual([paused.spanId]);
    const [approveSpan] = byName(rx.spans, 'approve');
    expect(approveSpan!.attributes['trajgate.pattern']).toBe(`127.0.0.1:${other.port}`);
    expect(byName(rx.spans, 'deny')[0]!.events.map((e) => e.name)).toEqual(['deny']);

    // Logs point at their spans: the outcome's log at its request's span.
    const outcomeLog = rx.logs.find(
      (l) =>
        l.attributes['trajgate.type'] === 'outcome' && JSON.parse(l.body as string).rid === rid,
    )!;
    expect([outcomeLog.traceId, outcomeLog.spanId]).toEqual([root!.traceId, paused.spanId]);

    // Nothing secret in any byte the collector received; its own header came as a header.
    const all = Buffer.concat(rx.raw).toString('utf8');
    expect(rx.headers.every((h) => h.authorization === `Bearer ${OTLP_TOKEN}`)).toBe(true);
    for (const secret of [AGENTS[0]!.token, proxyAuthValue])
      expect(all.includes(secret), `a secret in the export: ${secret}`).toBe(false);
  });
});

describe('telemetry.otlp on reload', () => {
  it('moves to a new endpoint, and stops when the key is removed', async () => {
    const [a, b] = [await startOtlpReceiver(), await startOtlpReceiver()];
    const keys = {
      agents: [AGENTS[0]],
      network: {
        allowPrivate: ['127.0.0.1/32'],
        ports: [allowed.port],
        allow: [`127.0.0.1:${allowed.port}`],
      },
    };
    const f = await fileGateway(ADMIN, { ...keys, telemetry: { otlp: { endpoint: a.url } } });
    const proxy = `http://127.0.0.1:${f.gw.proxy.port}`;
    const api = adminClient(f.gw.admin.port, ADMIN);
    const target = (s: ReceivedSpan) => s.attributes['trajgate.target'];
    expect((await viaProxy(proxy, `${allowed.url}/to-a`, auth(0))).status).toBe(200);
    await waitFor(() => byName(a.spans, 'request').length === 1, 20_000, 'the span at a');

    f.write({ ...keys, telemetry: { otlp: { endpoint: b.url } } });
    expect((await api.post('/api/reload')).status).toBe(200);
    expect((await viaProxy(proxy, `${allowed.url}/to-b`, auth(0))).status).toBe(200);
    await waitFor(() => byName(b.spans, 'request').length === 1, 20_000, 'the span at b');
    expect(byName(b.spans, 'request').map(target)).toEqual([`${allowed.url}/to-b`]);
    expect(byName(a.spans, 'request').map(target)).toEqual([`${allowed.url}/to-a`]);
    // The new collector gets the session's root too, in the same trace.
    const [root] = byName(b.spans, 'session');
    expect(root!.traceId).toBe(byName(a.spans, 'session')[0]!.traceId);
    expect(byName(b.spans, 'request')[0]!.parentSpanId).toBe(root!.spanId);
    // The reload's record is written before it takes effect: the old collector gets it, flushed.
    const reloaded = (l: { attributes: Record<string, unknown> }) =>
      l.attributes['trajgate.type'] === 'config';
    await waitFor(() => a.logs.some(reloaded), 20_000, 'the config record at a');
    expect(b.logs.some(reloaded)).toBe(false);

    f.write(keys);
    expect((await api.post('/api/reload')).status).toBe(200);
    expect((await viaProxy(proxy, `${allowed.url}/nowhere`, auth(0))).status).toBe(200);
    await waitForRecords(f, isOutcome, 3);
    // b's exporter, shut down with the reload, sends what it held (up to the reload's own record,
    // written before it took effect) and nothing written after.
    await waitFor(() => b.logs.filter(reloaded).length === 1, 20_000, 'the last record at b');
    const after = (l: ReceivedLog) => JSON.stringify(l.body).includes('/nowhere');
    expect(b.logs.filter(after)).toEqual([]);
    expect([...a.spans, ...b.spans].map(target)).not.toContain(`${allowed.url}/nowhere`);
  });
});
