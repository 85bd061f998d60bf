import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamTrust } from '../../src/action/trust.js';
import { Notifier } from '../../src/review/notify.js';
import { refusingPort } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * The notifier against a real receiver on loopback: the connection cap, the bounded queue with
 * its drop count and once-a-second log line, coalescing of a session's burst, and a retry
 * giving way to a newer notification of its session.
 */
let notifier: Notifier | undefined;
afterEach(async () => {
  await notifier?.close();
  notifier = undefined;
});

function start(webhook: string, options: Record<string, unknown>) {
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => lines.push(JSON.parse(s).msg) });
  const counts = { failed: 0, dropped: 0, queued: 0, peakQueued: 0 };
  const n = (notifier = new Notifier(
    {
      webhook,
      headers: {},
      timeout: 30_000,
      attempts: 1,
      backoff: 100,
      connections: 2,
      queue: 5,
      ...options,
    },
    log,
    {
      failed: () => counts.failed++,
      dropped: () => counts.dropped++,
      queued: (q) => {
        counts.queued = q;
        counts.peakQueued = Math.max(counts.peakQueued, q);
      },
    },
    upstreamTrust([])(),
  ));
  return { n, counts, lines };
}

const pause = (session: string, v: number) => ({ session, v, boundary: 'network' });

describe('bounded webhook notifications', () => {
  it('a hanging receiver gets `connections` requests; the queue holds `queue`, drops the oldest', async () => {
    const hook = await startWebhook(null);
    const { n, counts, lines } = start(hook.url, {});
    for (let i = 0; i < 20; i++) n.send('pause', `s${i}`, pause(`s${i}`, 1));
    await waitFor(() => hook.deliveries.length === 2);
    expect(hook.peakOpen).toBe(2);
    expect(counts).toMatchObject({ queued: 5, peakQueued: 5, dropped: 13, failed: 0 });
    // the first drop is logged at once, the rest of that second in one line after it
    expect(lines).toEqual([
      'notify: queue full (notify.queue: 5), dropped the 1 oldest pending notification(s)',
    ]);
    await waitFor(() => lines.length === 2);
    expect(lines[1]).toMatch(/dropped the 12 oldest/);
    // a burst of a waiting session is coalesced in place: no drop, no new entry
    for (let v = 2; v <= 6; v++) n.send('pause', 's19', pause('s19', v));
    expect(counts).toMatchObject({ queued: 5, dropped: 13 });
    // once the receiver answers: the first two, then the five kept (s15…s19), oldest first
    hook.status = 204;
    hook.release(204);
    await waitFor(() => hook.deliveries.length === 7);
    const got = hook.deliveries.map((d) => [d.body.session, d.body.v, d.body.coalesced]);
    expect(got.slice(0, 2)).toEqual([
      ['s0', 1, 0],
      ['s1', 1, 0],
    ]);
    expect(got.slice(2)).toEqual([
      ['s15', 1, 0],
      ['s16', 1, 0],
      ['s17', 1, 0],
      ['s18', 1, 0],
      ['s19', 6, 5],
    ]);
    expect(hook.deliveries[6]!.body).toEqual({
      kind: 'pause',
      coalesced: 5,
      session: 's19',
      v: 6,
      boundary: 'network',
    });
    expect(hook.peakOpen).toBe(2);
    expect(counts).toMatchObject({ queued: 0, failed: 0 });
  });

  it("one session's notifications are sent one at a time, a retry giving way to a newer one", async () => {
    const hook = await startWebhook(500);
    const { n, counts } = start(hook.url, { attempts: 3, backoff: 300 });
    n.send('pause', 'a', pause('a', 1));
    await waitFor(() => hook.deliveries.length === 1);
    // while v1 waits to retry, v2 and v3 arrive: they wait (same key), coalesced
    hook.status = 204;
    n.send('pause', 'a', pause('a', 2));
    n.send('pause', 'a', pause('a', 3));
    n.send('review', 'a', { event: { session: 'a' } });
    await waitFor(() => hook.deliveries.length === 3);
    const got = hook.deliveries.map((d) => [d.body.kind, d.body.v, d.body.coalesced]);
    // the review (another key) goes at once; v1's retry gives way to v3, which stands for v1 and v2
    expect(got).toEqual([
      ['pause', 1, 0],
      ['review', undefined, 0],
      ['pause', 3, 2],
    ]);
    expect(counts).toMatchObject({ failed: 0, dropped: 0, queued: 0 });
  });

  it('a refusing receiver: retried, counted as failed, the queue still bounded', async () => {
    const url = `http://127.0.0.1:${await refusingPort()}/hook`;
    const { n, counts } = start(url, { attempts: 2, backoff: 10, queue: 3, connections: 1 });
    for (let i = 0; i < 10; i++) n.send('pause', `s${i}`, pause(`s${i}`, 1));
    expect(counts.peakQueued).toBe(3);
    expect(counts.dropped).toBe(6);
    await waitFor(() => counts.failed === 4);
    expect(counts.queued).toBe(0);
  });

  it('close abandons the queue and the deliveries under way at once', async () => {
    const hook = await startWebhook(null);
    const { n, counts, lines } = start(hook.url, {});
    for (let i = 0; i < 6; i++) n.send('pause', `s${i}`, pause(`s${i}`, 1));
    await waitFor(() => hook.deliveries.length === 2);
    const t = Date.now();
    await n.close();
    notifier = undefined;
    expect(Date.now() - t).toBeLessThan(1_000);
    expect(counts).toMatchObject({ queued: 0, failed: 2 });
    expect(lines).toContain('notify: stopping, 4 queued notification(s) not sent');
    n.send('pause', 'late', pause('late', 1)); // ignored once closed
    expect(counts.queued).toBe(0);
  });
});
