import { describe, expect, it } from 'vitest';
import type { AdminClient } from '../helpers/admin.js';
import { viaProxy } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { refusingPort, startSilentServer } from '../helpers/raw.js';
import { oneAgentStage } from '../helpers/review-story.js';
import { startWebhook } from '../helpers/webhook.js';
import type { EventRecord } from '../../src/journal/records.js';
import { waitFor } from '../helpers/wait.js';

/**
 * notify.webhook: the pause record (and, if asked, each REVIEW) is POSTed as JSON; a webhook
 * that is down, failing or silent never delays the agent's answer and is counted in metrics.
 * The silent-webhook test sets notify.timeout to 3 s, above any answer's time on a busy machine.
 */
const { other, auth, start: startStage, stopped } = await oneAgentStage();

async function start(notify: Record<string, unknown>, limits: Record<string, unknown> = {}) {
  const [g, api] = await startStage({ policy: { holdTimeout: '30s' }, notify, limits });
  return { g, api };
}

/** REVIEW (timed), then PAUSE with the second request held (time until the API shows it). */
async function review_then_pause(g: TestGateway, api: AdminClient) {
  let t = Date.now();
  const review = await viaProxy(g.proxyUrl, `${other.url}/first`, auth);
  const reviewMs = Date.now() - t;
  expect(review.status).toBe(403);
  t = Date.now();
  const held = viaProxy(g.proxyUrl, `${other.url}/second`, auth);
  await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
  return { reviewMs, heldMs: Date.now() - t, held };
}

async function failures(api: AdminClient): Promise<number> {
  const text = (await api.get('/metrics')).text;
  return Number(/^trajgate_webhook_failures_total (\d+)$/m.exec(text)?.[1] ?? NaN);
}

describe('webhook notification', () => {
  it('POSTs the pause record as JSON on PAUSE (with notify.headers), not on REVIEW by default', async () => {
    const hook = await startWebhook();
    const { g, api } = await start({ webhook: hook.url, headers: { 'x-hook-secret': 's3cret' } });
    const { held } = await review_then_pause(g, api);
    await waitFor(async () => hook.deliveries.length === 1);
    const [d] = hook.deliveries;
    expect(d!.headers['content-type']).toBe('application/json');
    expect(d!.headers['x-hook-secret']).toBe('s3cret');
    const body = d!.body;
    expect(body).toMatchObject({
      kind: 'pause',
      coalesced: 0,
      session: 'agent-1',
      boundary: 'network',
      count: 2,
      restored: false,
    });
    expect(body.trigger).toMatchObject({ verdict: 'PAUSE', target: `${other.url}/second` });
    expect((body.recent as EventRecord[]).map((e) => [e.verdict, e.target])).toEqual([
      ['REVIEW', `${other.url}/first`],
      ['PAUSE', `${other.url}/second`],
    ]);
    expect(body.held).toEqual([
      expect.objectContaining({ what: `GET ${other.url}/second`, since: expect.any(Number) }),
    ]);
    // the same record as the API's
    const detail = await api.get('/api/sessions/agent-1');
    const {
      kind: _kind,
      coalesced: _coalesced,
      text: _text,
      url: _url,
      links: _links,
      ...record
    } = body;
    expect(detail.json.pause).toEqual(record);
    expect(await failures(api)).toBe(0);
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
    expect(hook.deliveries).toHaveLength(1);
  });

  it('with notify.on [pause, review] it also POSTs each REVIEW', async () => {
    const hook = await startWebhook(200);
    const { g, api } = await start({ webhook: hook.url, on: ['pause', 'review'] });
    const { held } = await review_then_pause(g, api);
    await waitFor(async () => hook.deliveries.length === 2);
    const kinds = hook.deliveries.map((d) => d.body.kind).sort();
    expect(kinds).toEqual(['pause', 'review']);
    const review = hook.deliveries.find((d) => d.body.kind === 'review')!.body;
    expect(review.event).toMatchObject({
      session: 'agent-1',
      verdict: 'REVIEW',
      boundary: 'network',
      count: 1,
      target: `${other.url}/first`,
    });
    await api.post('/api/sessions/agent-1/deny');
    await held;
  });

  it('a failing webhook (500) is retried 3 times with growing backoff, then counted', async () => {
    const hook = await startWebhook(500);
    const { g, api } = await start({ webhook: hook.url });
    const { held } = await review_then_pause(g, api);
    await waitFor(async () => (await failures(api)) === 1);
    expect(hook.deliveries).toHaveLength(3);
    const [a, b, c] = hook.deliveries.map((d) => d.at);
    expect(b! - a!).toBeGreaterThanOrEqual(450);
    expect(c! - b!).toBeGreaterThanOrEqual(950);
    expect(hook.deliveries.every((d) => d.body.kind === 'pause')).toBe(true);
    await api.post('/api/sessions/agent-1/deny');
    await held;
  });

  it('a webhook that is down does not delay the agent; the failure is counted', async () => {
    // Backoff 3 s: an answer that waited for the webhook's retries would take 9 s.
    const { g, api } = await start({
      webhook: `http://127.0.0.1:${await refusingPort()}/hook`,
      on: ['pause', 'review'],
      backoff: '3s',
    });
    const { reviewMs, heldMs, held } = await review_then_pause(g, api);
    expect(reviewMs).toBeLessThan(3_000);
    expect(heldMs).toBeLessThan(3_000);
    const t = Date.now();
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
    expect(Date.now() - t).toBeLessThan(3_000);
    await waitFor(async () => (await failures(api)) === 2);
  });

  it('a silent webhook (never answers) does not delay the agent; counted after the timeouts', async () => {
    const silent = await startSilentServer();
    const { g, api } = await start({
      webhook: `http://127.0.0.1:${silent.port}/hook`,
      on: ['pause', 'review'],
      timeout: '3s',
      backoff: '100ms',
    });
    const { reviewMs, heldMs, held } = await review_then_pause(g, api);
    expect(reviewMs).toBeLessThan(2_500);
    expect(heldMs).toBeLessThan(2_500);
    await waitFor(async () => silent.connections >= 2);
    // the agent is answered at once while the webhook still hangs (3 s a try)
    const t = Date.now();
    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
    expect(Date.now() - t).toBeLessThan(2_500);
    const started = Date.now();
    await waitFor(async () => (await failures(api)) === 2, 30_000);
    // 3 attempts of 3 s each, with 0.1 s and 0.2 s between them, the second already begun
    expect(Date.now() - started).toBeGreaterThan(3_000);
    expect(silent.connections).toBeGreaterThanOrEqual(6);
  }, 90_000);

  it('stopping the gateway is not held up by a webhook that never answers', async () => {
    const silent = await startSilentServer();
    const { g, api } = await start(
      { webhook: `http://127.0.0.1:${silent.port}/hook` },
      { drainTimeout: '1s' },
    );
    const { held } = await review_then_pause(g, api);
    await waitFor(async () => silent.connections >= 1);
    const t = Date.now();
    stopped();
    await g.stop();
    // Stopping abandons deliveries under way (counted as failed) instead of waiting them out.
    expect(Date.now() - t).toBeLessThan(3_000);
    expect((await held).status).toBe(403);
  }, 90_000);
});
