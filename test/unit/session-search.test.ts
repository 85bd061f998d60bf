import { describe, expect, it } from 'vitest';
import { SEARCH_SCAN, SessionList, sessionsQuery } from '../../src/review/session-list.js';
import type { Cursor, Key, Rank } from '../../src/review/session-order.js';
import { SessionOrder } from '../../src/review/session-order.js';

/**
 * Searching the sessions list (`q`): a substring of the session id, any case, found by
 * looking at a bounded number of sessions per call; `next` goes on from the last one looked
 * at, so walking the pages finds every match once, in the list's order.
 */

const ALL: ReadonlySet<Rank> = new Set([0, 1, 2]);

function filled(n: number): SessionOrder {
  const order = new SessionOrder();
  order.load(
    Array.from({ length: n }, (_, i): [string, Key] => [
      `agent-${i}`,
      { rank: (i % 7 === 0 ? 2 : i % 5 === 0 ? 1 : 0) as Rank, at: i % 40 },
    ]),
  );
  return order;
}

describe('SessionOrder.page with a match and a scan bound', () => {
  it('looks at no more than `scan` sessions per call and finds every match once, in order', () => {
    const order = filled(3000);
    const everyone = order.page(ALL, null, 5000).ids;
    const wanted = everyone.filter((id) => id.includes('77'));
    const found: string[] = [];
    let cursor: Cursor | null = null;
    let calls = 0;
    let emptyCalls = 0;
    for (; calls < 1000; calls++) {
      let looked = 0;
      const match = (id: string) => (looked++, id.includes('77'));
      const page: { ids: string[]; next: Cursor | null } = order.page(ALL, cursor, 25, match, 64);
      expect(looked).toBeLessThanOrEqual(64);
      expect(page.ids.length).toBeLessThanOrEqual(25);
      if (page.ids.length === 0) emptyCalls++;
      found.push(...page.ids);
      if (page.next === null) break;
      cursor = page.next;
    }
    expect(found).toEqual(wanted);
    expect(wanted.length).toBeGreaterThan(30);
    // Whole stretches without a match end a call all the same, and say where to go on.
    expect(calls).toBeGreaterThanOrEqual(Math.ceil(3000 / 64) - 1);
    expect(emptyCalls).toBeGreaterThan(0);
  });

  it('a full page ends at its last row; a search that looked at everything ends with null', () => {
    const order = filled(100);
    const first = order.page(ALL, null, 3, (id) => id.endsWith('1'), 1000);
    expect(first.ids).toHaveLength(3);
    expect(first.next?.id).toBe(first.ids[2]);
    const none = order.page(ALL, null, 10, () => false, 1000);
    expect(none).toEqual({ ids: [], next: null });
    const stopped = order.page(ALL, null, 10, () => false, 40);
    expect(stopped.ids).toEqual([]);
    expect(stopped.next).toMatchObject({ id: order.page(ALL, null, 40).ids[39] });
  });
});

describe('SessionList search (q)', () => {
  const N = 25_000;
  const keys = new Map<string, Key>();
  const list = new SessionList((id) => keys.get(id) ?? null);
  for (let i = 0; i < N; i++) {
    // The one to find sorts last: the oldest activity of all.
    const id = i === 0 ? 'Needle-Agent' : `agent-${String(i).padStart(5, '0')}`;
    keys.set(id, { rank: 0, at: i === 0 ? 0 : i });
  }
  list.load(keys.keys());
  const page = (q: string) => list.page(sessionsQuery(new URLSearchParams(q)));

  it('any case, walked with next: one call per SEARCH_SCAN sessions at most', () => {
    let cursor = '';
    const found: string[] = [];
    let calls = 0;
    for (; calls < 100; calls++) {
      const p = page(`q=nEEdle&limit=50${cursor}`);
      expect(p.total).toBeNull();
      expect(p.counts).toEqual({ active: N, flagged: 0, paused: 0 });
      found.push(...p.ids);
      if (p.next === null) break;
      cursor = `&cursor=${p.next}`;
    }
    expect(found).toEqual(['Needle-Agent']);
    expect(calls + 1).toBe(Math.ceil(N / SEARCH_SCAN));
  });

  it('with a state filter, and with agent (both must hold)', () => {
    keys.set('agent-00042', { rank: 2, at: 99_999 });
    list.touch('agent-00042');
    expect(page('q=00042&state=paused')).toMatchObject({ ids: ['agent-00042'], next: null });
    expect(page('q=00042&state=flagged')).toMatchObject({ ids: [], next: null });
    expect(page('agent=agent-00042&q=042')).toMatchObject({ ids: ['agent-00042'], total: null });
    expect(page('agent=agent-00042&q=043')).toMatchObject({ ids: [], total: null });
    expect(page('agent=agent-00042')).toMatchObject({ ids: ['agent-00042'], total: 1 });
  });
});

describe('sessionsQuery q', () => {
  it('keeps it in lower case', () => {
    expect(sessionsQuery(new URLSearchParams('q=Agent-7')).search).toBe('agent-7');
  });

  it.each([
    ['q=', /query "q" must be one text of 1 to 200 characters .*got 0 characters/],
    [`q=${'x'.repeat(201)}`, /query "q" must be one text of 1 to 200 characters .*got 201/],
    ['q=a&q=b', /query "q" must be one text .*got 2 of them/],
  ])('%s → E_BAD_FIELD naming q', (query, message) => {
    expect(() => sessionsQuery(new URLSearchParams(query))).toThrow(message);
  });
});
