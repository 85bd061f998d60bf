import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DecisionLinks, PauseLinks } from '../../src/review/decision-links.js';
import { Notices } from '../../src/review/notices.js';
import { NoticeQueue } from '../../src/review/notify.js';
import type { Notice } from '../../src/review/notify.js';
import { Review } from '../../src/review/review.js';
import { eventRecord } from '../helpers/event-record.js';
import { tempDir } from '../helpers/tmp.js';

const idle = () => false;
const json = (n: number) => JSON.stringify({ n });

/** Takes everything, oldest first, as [session-ish key, payload n, coalesced]. */
function drain(q: NoticeQueue): [string, number, number][] {
  const out: [string, number, number][] = [];
  for (let n: Notice | undefined; (n = q.take(idle));)
    out.push([n.key.replace('\0', ' '), (JSON.parse(n.json) as { n: number }).n, n.coalesced]);
  return out;
}

describe('NoticeQueue', () => {
  it('keeps notifications oldest first, one per session and kind', () => {
    const q = new NoticeQueue(10);
    q.push('pause', 's1', json(1));
    q.push('review', 's1', json(2));
    q.push('pause', 's2', json(3));
    expect(q.size).toBe(3);
    expect(drain(q)).toEqual([
      ['pause s1', 1, 0],
      ['review s1', 2, 0],
      ['pause s2', 3, 0],
    ]);
    expect(q.size).toBe(0);
  });

  it('coalesces a burst of one session and kind into its place, carrying the latest', () => {
    const q = new NoticeQueue(10);
    q.push('pause', 's1', json(1));
    q.push('pause', 's2', json(2));
    for (let n = 3; n <= 6; n++) expect(q.push('pause', 's1', json(n))).toBeUndefined();
    expect(drain(q)).toEqual([
      ['pause s1', 6, 4],
      ['pause s2', 2, 0],
    ]);
  });

  it('past its bound drops the oldest, returns it, and never holds more than the bound', () => {
    const q = new NoticeQueue(3);
    const dropped: number[] = [];
    for (let n = 1; n <= 8; n++) {
      const d = q.push('pause', `s${n}`, json(n));
      if (d) dropped.push((JSON.parse(d.json) as { n: number }).n);
      expect(q.size).toBeLessThanOrEqual(3);
    }
    expect(dropped).toEqual([1, 2, 3, 4, 5]);
    expect(drain(q).map(([, n]) => n)).toEqual([6, 7, 8]);
  });

  it('a coalesced notification keeps its place and is dropped as the oldest', () => {
    const q = new NoticeQueue(2);
    q.push('pause', 's1', json(1));
    q.push('pause', 's2', json(2));
    q.push('pause', 's1', json(3)); // coalesced: no room needed
    expect(q.push('pause', 's3', json(4))?.coalesced).toBe(1);
    expect(drain(q)).toEqual([
      ['pause s2', 2, 0],
      ['pause s3', 4, 0],
    ]);
  });

  it('take skips keys with a delivery under way, so a session is never sent out of order', () => {
    const q = new NoticeQueue(10);
    q.push('pause', 's1', json(1));
    q.push('pause', 's2', json(2));
    const busy = new Set(['pause\0s1']);
    expect(q.take((k) => busy.has(k))?.key).toBe('pause\0s2');
    expect(q.take((k) => busy.has(k))).toBeUndefined();
    expect(q.size).toBe(1);
    busy.clear();
    expect(q.take((k) => busy.has(k))?.key).toBe('pause\0s1');
  });

  it('a retry gives way to a newer notification of its key, which then stands for both', () => {
    const q = new NoticeQueue(10);
    q.push('pause', 's1', json(1));
    q.push('pause', 's1', json(2));
    const retrying = q.take(idle)!;
    expect(retrying.coalesced).toBe(1);
    expect(q.supersede(retrying)).toBe(false); // nothing newer: it retries
    q.push('pause', 's1', json(3));
    expect(q.supersede(retrying)).toBe(true);
    expect(drain(q)).toEqual([['pause s1', 3, 2]]);
  });

  it('clear empties it and says how many it held', () => {
    const q = new NoticeQueue(10);
    q.push('pause', 's1', json(1));
    q.push('review', 's1', json(2));
    expect(q.clear()).toBe(2);
    expect(q.size).toBe(0);
  });
});

/**
 * The pause payload of a decision a sequence rule named: the pause record carries the earlier
 * event (kept by Review though it left the recent events), the payload links both events.
 */
describe('pause payload of a sequence rule', () => {
  const config = parseConfig(
    'version: 1\nworkspace: /w\npolicy:\n  recentEvents: 3\n',
    'test',
    tempDir(),
  );
  const ev = eventRecord;
  const network = (seq: number, name: string, after: number) =>
    ev(seq, {
      source: 'proxy',
      kind: 'network',
      target: 'https://example.com/up',
      method: 'POST',
      verdict: 'PAUSE',
      boundary: name,
      rule: { name, after },
    });
  const links: PauseLinks = {
    approveOnce: 'https://t/decide/o',
    approvePattern: null,
    approveReset: 'https://t/decide/r',
    deny: 'https://t/decide/d',
    suggestion: null,
    expiresAt: '2026-03-01T10:05:00.000Z',
  };
  const notices = (review: Review) =>
    new Notices(
      () => new URL('https://t/'),
      { forPause: () => links } as unknown as DecisionLinks,
      (id, seq) => review.earlier(id, seq),
    );

  it('names the marking event though it left the recent events, with both URLs', () => {
    const review = new Review(config, pino({ level: 'silent' }));
    review.observe(ev(41, { target: '/home/u/.ssh/id_ed25519', marks: ['secret-then-egress'] }));
    for (let seq = 42; seq < 57; seq++) review.observe(ev(seq));
    const record = review.pauseFor(network(57, 'secret-then-egress', 41), []);
    expect(record.recent.map((e) => e.seq)).toEqual([55, 56, 57]);
    expect(record.after).toMatchObject({ seq: 41, target: '/home/u/.ssh/id_ed25519' });
    const payload = notices(review).pause(record) as Record<string, unknown>;
    expect(payload).toMatchObject({
      eventUrl: 'https://t/#/session/s/event/57',
      afterUrl: 'https://t/#/session/s/event/41',
      after: { seq: 41 },
      trigger: { rule: { name: 'secret-then-egress', after: 41 } },
    });
    expect(payload.text).toContain(
      'paused by rule secret-then-egress: <https://t/#/session/s/event/57|#57> network POST ' +
        'https[:]//example[.]com/up after <https://t/#/session/s/event/41|#41> read /home/u/.ssh/id_ed25519; ',
    );
  });

  it('an event that marks on failure is kept among the newest 64 that might', () => {
    const review = new Review(config, pino({ level: 'silent' }));
    for (let seq = 1; seq <= 70; seq++)
      review.observe(ev(seq, { kind: 'command', onFailure: ['drift-after-failure'] }));
    expect(review.earlier('s', 7)?.seq).toBe(7);
    expect(review.earlier('s', 6)).toBeUndefined();
    const record = review.pauseFor(network(71, 'drift-after-failure', 7), []);
    expect(record.after?.seq).toBe(7);
  });

  it('without a rule: no earlier event, no event URLs', () => {
    const review = new Review(config, pino({ level: 'silent' }));
    const record = review.pauseFor(ev(3, { verdict: 'PAUSE', boundary: 'network' }), []);
    expect(record).not.toHaveProperty('after');
    const payload = notices(review).pause(record);
    expect(payload).not.toHaveProperty('eventUrl');
    expect(payload).not.toHaveProperty('afterUrl');
  });
});
