import { describe, expect, it } from 'vitest';
import { SessionList, sessionsQuery } from '../../src/review/session-list.js';
import type { Key, Rank } from '../../src/review/session-order.js';
import { SessionOrder } from '../../src/review/session-order.js';

/**
 * The sessions list's order: paused, flagged, active, each newest activity first (ties by id),
 * kept as sessions move; pages after a cursor stay right while sessions change between them.
 */

const ALL: ReadonlySet<Rank> = new Set([0, 1, 2]);

/** The order the list must have: what the admin API sorted before it kept an index. */
const sorted = (keys: Map<string, Key>) =>
  [...keys]
    .sort(([a, x], [b, y]) => y.rank - x.rank || y.at - x.at || (a < b ? -1 : 1))
    .map(([id]) => id);

/** Every page, walked with `next` (bounded), with a hook run between pages. */
function walk(
  order: SessionOrder,
  limit: number,
  ranks: ReadonlySet<Rank> = ALL,
  between: (page: number) => void = () => undefined,
) {
  const ids: string[] = [];
  let page = order.page(ranks, null, limit);
  for (let i = 0; i < 10_000; i++) {
    expect(page.ids.length).toBeLessThanOrEqual(limit);
    ids.push(...page.ids);
    if (page.next === null) return ids;
    between(i);
    page = order.page(ranks, page.next, limit);
  }
  throw new Error('the walk did not end');
}

/** A deterministic pseudo-random sequence (no flaky orders). */
function lcg(seed: number) {
  let s = seed;
  return (n: number) => ((s = (s * 1103515245 + 12345) % 2 ** 31), s % n);
}

describe('SessionOrder', () => {
  it('keeps the list order through thousands of random moves, removals and splits', () => {
    const order = new SessionOrder();
    const keys = new Map<string, Key>();
    const rand = lcg(7);
    for (let i = 0; i < 6000; i++) {
      const id = `s${rand(3000)}`;
      if (rand(10) === 0) {
        order.remove(id);
        keys.delete(id);
      } else {
        // Few distinct times, so ties by id are exercised.
        const key = { rank: rand(3) as Rank, at: rand(50) };
        order.set(id, key);
        keys.set(id, key);
      }
    }
    expect(order.size).toBe(keys.size);
    expect(walk(order, 1000)).toEqual(sorted(keys));
    expect(walk(order, 7)).toEqual(sorted(keys));
    for (const rank of [0, 1, 2] as Rank[]) {
      const only = new Map([...keys].filter(([, k]) => k.rank === rank));
      expect(order.count(rank)).toBe(only.size);
      expect(walk(order, 33, new Set([rank]))).toEqual(sorted(only));
    }
    const pausedAndActive = new Map([...keys].filter(([, k]) => k.rank !== 1));
    expect(walk(order, 50, new Set<Rank>([0, 2]))).toEqual(sorted(pausedAndActive));
  });

  it('loaded at once (a start), the same order, and moves after it keep it', () => {
    const keys = new Map<string, Key>();
    const rand = lcg(11);
    for (let i = 0; i < 5000; i++) keys.set(`s${i}`, { rank: rand(3) as Rank, at: rand(400) });
    const order = new SessionOrder();
    order.load(keys);
    expect(walk(order, 100)).toEqual(sorted(keys));
    for (let i = 0; i < 3000; i++) {
      const id = `s${rand(6000)}`;
      const key = { rank: rand(3) as Rank, at: 400 + i };
      order.set(id, key);
      keys.set(id, key);
    }
    order.remove('s1');
    keys.delete('s1');
    expect(walk(order, 100)).toEqual(sorted(keys));
    expect(() => order.load(keys)).toThrow(/not empty/);
  });

  it('pages of a list that changes between them: nothing that stayed is lost or repeated', () => {
    const order = new SessionOrder();
    for (let i = 0; i < 300; i++) order.set(`s${String(i).padStart(3, '0')}`, { rank: 0, at: i });
    const moved = new Set<string>();
    const seen = walk(order, 25, ALL, (page) => {
      // A session already listed becomes newer; one not yet listed is paused (moves up, past
      // the cursor); one is removed; a new one arrives.
      const id = (n: number) => `s${String(n).padStart(3, '0')}`;
      for (const n of [299 - page * 25, 100 - page, 200 - page]) moved.add(id(n));
      order.set(id(299 - page * 25), { rank: 0, at: 1000 + page });
      order.set(id(100 - page), { rank: 2, at: 5 });
      order.remove(id(200 - page));
      order.set(`new${page}`, { rank: 0, at: 2000 + page });
    });
    const stayed = [...Array(300).keys()]
      .map((n) => `s${String(n).padStart(3, '0')}`)
      .filter((id) => !moved.has(id))
      .reverse();
    expect(seen.filter((id) => !moved.has(id) && !id.startsWith('new'))).toEqual(stayed);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('a cursor whose session left the list or moved still pages on from its place', () => {
    const order = new SessionOrder();
    for (const [id, at] of [
      ['a', 30],
      ['b', 20],
      ['c', 10],
    ] as const)
      order.set(id, { rank: 1, at });
    order.set('z', { rank: 0, at: 99 });
    const first = order.page(ALL, null, 2);
    expect(first.ids).toEqual(['a', 'b']);
    order.remove('b');
    expect(order.page(ALL, first.next, 2).ids).toEqual(['c', 'z']);
    order.set('b', { rank: 2, at: 50 });
    expect(order.page(ALL, first.next, 10)).toEqual({ ids: ['c', 'z'], next: null });
    expect(order.remove('b')).toBe(true);
    expect(order.remove('b')).toBe(false);
    expect(order.size).toBe(3);
  });
});

describe('SessionList', () => {
  it('places touched sessions at the next read, drops those no longer known', () => {
    const keys = new Map<string, Key>([
      ['a', { rank: 0, at: 1 }],
      ['b', { rank: 0, at: 2 }],
    ]);
    const list = new SessionList((id) => keys.get(id) ?? null);
    list.touch('a');
    list.touch('b');
    const q = sessionsQuery(new URLSearchParams());
    expect(list.page(q)).toMatchObject({ ids: ['b', 'a'], next: null, total: 2 });
    keys.set('a', { rank: 2, at: 3 });
    list.touch('a');
    keys.delete('b');
    list.touch('b');
    expect(list.page(q)).toMatchObject({
      ids: ['a'],
      total: 1,
      counts: { active: 0, flagged: 0, paused: 1 },
    });
    keys.delete('a');
    list.touch('a');
    expect(list.page(q)).toMatchObject({ ids: [], total: 0 });
  });

  it('filters by state and agent; total counts what matches, counts the whole list', () => {
    const keys = new Map<string, Key>();
    const list = new SessionList((id) => keys.get(id) ?? null);
    for (let i = 0; i < 30; i++) {
      keys.set(`s${i}`, { rank: (i % 3) as Rank, at: i });
      list.touch(`s${i}`);
    }
    const page = (q: string) => list.page(sessionsQuery(new URLSearchParams(q)));
    const flaggedOrPaused = page('state=flagged&state=paused&limit=4');
    expect(flaggedOrPaused).toMatchObject({
      ids: ['s29', 's26', 's23', 's20'],
      total: 20,
      counts: { active: 10, flagged: 10, paused: 10 },
    });
    expect(page('state=active,flagged').total).toBe(20);
    expect(page('agent=s4')).toMatchObject({ ids: ['s4'], total: 1, next: null });
    expect(page('agent=s4&state=paused')).toMatchObject({ ids: [], total: 0 });
    expect(page('agent=nobody')).toMatchObject({ ids: [], total: 0 });
  });

  it('a row whose place went stale without a touch is placed again for the next read', () => {
    const keys = new Map<string, Key>([['a', { rank: 0, at: 1 }]]);
    const list = new SessionList((id) => keys.get(id) ?? null);
    list.touch('a');
    const q = sessionsQuery(new URLSearchParams('state=active'));
    expect(list.page(q).ids).toEqual(['a']);
    keys.set('a', { rank: 2, at: 1 });
    expect(list.page(q).ids).toEqual(['a']);
    expect(list.page(q).ids).toEqual([]);
    expect(list.page(sessionsQuery(new URLSearchParams('state=paused'))).ids).toEqual(['a']);
  });
});

describe('sessionsQuery', () => {
  it.each([
    ['limit=0', /query "limit" must be a whole number from 1 to 500, got "0"/],
    ['limit=501', /"limit".*got "501"/],
    ['limit=ten', /"limit".*got "ten"/],
    ['limit=1.5', /"limit".*got "1.5"/],
    ['state=stopped', /query "state" must be active, flagged, paused .*got "stopped"/],
    ['state=active,', /query "state".*got ""/],
    ['agent=a&agent=b', /query "agent" must name one agent/],
    ['agent=', /query "agent" must name one agent/],
    ['cursor=xyz', /query "cursor" is not a cursor this gateway gave/],
    [`cursor=${Buffer.from('[3,1,"a"]').toString('base64url')}`, /query "cursor"/],
    [`cursor=${Buffer.from('[1,-1,"a"]').toString('base64url')}`, /query "cursor"/],
    ['sort=id', /query "sort" is not known here \(known: limit, cursor, state, agent, q\)/],
  ])('%s → E_BAD_FIELD naming the parameter', (query, message) => {
    expect(() => sessionsQuery(new URLSearchParams(query))).toThrow(message);
    try {
      sessionsQuery(new URLSearchParams(query));
    } catch (err) {
      expect((err as { code: string }).code).toBe('E_BAD_FIELD');
    }
  });

  it('without parameters: every state, the first 100', () => {
    expect(sessionsQuery(new URLSearchParams())).toEqual({
      ranks: new Set([0, 1, 2]),
      cursor: null,
      limit: 100,
      agent: null,
      search: null,
    });
  });
});
