import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { viaProxy } from '../helpers/admin.js';
import { oneAgentStage } from '../helpers/review-story.js';
import { waitFor } from '../helpers/wait.js';

/**
 * notify.secret: every delivery is signed (X-Trajgate-Timestamp, X-Trajgate-Signature); a
 * receiver that verifies with its own code (the recipe in docs/notifications.md) accepts what trajgate sent
 * and rejects the same delivery with its body altered. Every payload names its session.
 */
const SECRET = 'webhook-secret-0123456789abcdef';
const { other, auth, start } = await oneAgentStage();

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly raw: string;
  readonly verified: boolean;
}

/** The receiver's own check: HMAC of "<timestamp>.<raw body>", at most 5 minutes old. */
function verify(headers: IncomingHttpHeaders, raw: string): boolean {
  const ts = String(headers['x-trajgate-timestamp']);
  const mac = createHmac('sha256', SECRET).update(`${ts}.${raw}`).digest('hex');
  const want = Buffer.from(`sha256=${mac}`);
  const got = Buffer.from(String(headers['x-trajgate-signature']));
  const fresh = /^\d+$/.test(ts) && Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
  return want.length === got.length && timingSafeEqual(want, got) && fresh;
}

/** A loopback receiver on port 0 answering 204 to a verified delivery, 401 to any other. */
async function receiver(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const verified = verify(req.headers, raw);
      received.push({ headers: req.headers, raw, verified });
      res.writeHead(verified ? 204 : 401).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

describe('signed webhooks (notify.secret)', () => {
  it('signs each payload (review and pause, both with session); a tampered body is rejected', async () => {
    const hook = await receiver();
    const [g, api] = await start({
      policy: { holdTimeout: '30s' },
      notify: { webhook: hook.url, on: ['pause', 'review'], secret: SECRET },
    });
    expect((await viaProxy(g.proxyUrl, `${other.url}/first`, auth)).status).toBe(403);
    const held = viaProxy(g.proxyUrl, `${other.url}/second`, auth);
    await waitFor(async () => hook.received.length === 2);
    for (const d of hook.received) {
      expect(d.headers['x-trajgate-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(d.verified).toBe(true);
      expect(JSON.parse(d.raw).session).toBe('agent-1');
    }
    expect(hook.received.map((d) => JSON.parse(d.raw).kind).sort()).toEqual(['pause', 'review']);
    // Nothing failed: the receiver accepted both (a 401 would be retried and counted).
    const metrics = (await api.get('/metrics')).text;
    expect(metrics).toMatch(/^trajgate_webhook_failures_total 0$/m);
    expect(JSON.stringify(hook.received)).not.toContain(SECRET);

    // The same delivery, its body altered (approve-once link swapped): the receiver refuses it.
    const pause = hook.received.find((d) => JSON.parse(d.raw).kind === 'pause')!;
    const tampered = pause.raw.replace('"session":"agent-1"', '"session":"agent-2"');
    expect(tampered).not.toBe(pause.raw);
    const replay = (body: string, headers: Record<string, string> = {}) =>
      fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-trajgate-timestamp': String(pause.headers['x-trajgate-timestamp']),
          'x-trajgate-signature': String(pause.headers['x-trajgate-signature']),
          ...headers,
        },
        body,
      });
    expect((await replay(tampered)).status).toBe(401);
    // The untouched one still verifies; moved outside 5 minutes it does not.
    expect((await replay(pause.raw)).status).toBe(204);
    const old = String(Math.floor(Date.now() / 1000) - 600);
    expect((await replay(pause.raw, { 'x-trajgate-timestamp': old })).status).toBe(401);

    await api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
  });

  it('without notify.secret nothing is signed', async () => {
    const hook = await receiver();
    const [g, api] = await start({ policy: { holdTimeout: '30s' }, notify: { webhook: hook.url } });
    expect((await viaProxy(g.proxyUrl, `${other.url}/first`, auth)).status).toBe(403);
    const held = viaProxy(g.proxyUrl, `${other.url}/second`, auth);
    await waitFor(async () => hook.received.length >= 1);
    expect(hook.received[0]!.headers['x-trajgate-signature']).toBeUndefined();
    await api.post('/api/sessions/agent-1/deny');
    await held;
  });
});
