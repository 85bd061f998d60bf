import { describe, expect, it } from 'vitest';
import { NoticeQueue } from '../../src/review/notify.js';
import type { Notice } from '../../src/review/notify.js';

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
