import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import type { TrajectoryStore } from '../../src/guard/store.js';
import { MemoryStore } from '../../src/guard/store.js';
import type { EventRecord } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { Review } from '../../src/review/review.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * What the guard and review remember sits behind TrajectoryStore. The
 * contract is written against the interface, so that another store can be held to it.
 */
function storeContract(name: string, make: () => TrajectoryStore<string>) {
  const plain = (s: TrajectoryStore<string>, id: string) => {
    const state = s.session(id);
    return (
      state && { counts: Object.fromEntries(state.counts), at: state.pausedAt, by: state.pausedBy }
    );
  };

  describe(`${name} keeps the TrajectoryStore contract`, () => {
    it('knows no session before a commit', () => {
      const s = make();
      expect(s.session('s')).toBeUndefined();
      expect([...s.sessions()]).toEqual([]);
      expect(s.recent('s')).toEqual([]);
    });

    it('installs absolute counts, so a commit installed twice changes nothing more', () => {
      const s = make();
      s.commit('s', { counted: { network: 1 }, pause: null });
      s.commit('s', { counted: { network: 2, workspace: 1 }, pause: null });
      s.commit('s', { counted: { network: 2, workspace: 1 }, pause: null });
      expect(plain(s, 's')).toEqual({ counts: { network: 2, workspace: 1 }, at: null, by: null });
      expect([...s.sessions()].map(([id]) => id)).toEqual(['s']);
    });

    it('keeps the first pause until a resume, which keeps counts unless reset', () => {
      const s = make();
      s.commit('s', { counted: { network: 2 }, pause: { at: 1000, by: 'network' } });
      s.commit('s', { counted: null, pause: { at: 2000, by: 'workspace' } });
      expect(plain(s, 's')).toEqual({ counts: { network: 2 }, at: 1000, by: 'network' });
      s.resume('s', false);
      expect(plain(s, 's')).toEqual({ counts: { network: 2 }, at: null, by: null });
      s.resume('s', true);
      expect(plain(s, 's')).toEqual({ counts: {}, at: null, by: null });
      s.resume('other', false);
      expect([...s.sessions()].map(([id]) => id)).toEqual(['s', 'other']);
    });

    it('keeps the newest records per session, oldest first', () => {
      const s = make();
      for (const r of ['a', 'b', 'c', 'd']) s.remember('s', r, 3);
      s.remember('t', 'x', 3);
      expect(s.recent('s')).toEqual(['b', 'c', 'd']);
      expect(s.recent('t')).toEqual(['x']);
      expect(s.session('s')).toBeUndefined();
    });
  });
}

storeContract('MemoryStore', () => new MemoryStore<string>());

describe('the guard and review share one store', () => {
  const config = parseConfig('version: 1\nworkspace: /tmp/agent-demo\n', 'test', tempDir());
  const event = (ts: number) =>
    normalizeEvent(
      { kind: 'network', target: 'https://example.test/api' },
      { session: 's', source: 'proxy', ts, workspace: '/tmp/agent-demo' },
    );

  it("two guards over one store decide as one: the second sees the first's count and pause", () => {
    const store = new MemoryStore<EventRecord>();
    const one = new Guard(compilePolicy(config), store);
    const two = new Guard(compilePolicy(config), store);
    const first = one.inspect(event(1000));
    one.commit('s', 1000, first);
    expect(first.verdict).toBe('REVIEW');
    const second = two.inspect(event(2000));
    expect(second.verdict).toBe('PAUSE');
    two.commit('s', 2000, second);
    expect(one.session('s')).toMatchObject({ pausedAt: 2000, pausedBy: 'network' });
    expect(store.session('s')?.counts.get('network')).toBe(2);
  });

  it("approvals and deny patterns live in the store, config entries and operators' alike", () => {
    const store = new MemoryStore<EventRecord>();
    const guard = new Guard(
      compilePolicy(
        parseConfig(
          'version: 1\nworkspace: /tmp/agent-demo\nnetwork:\n  allow: [docs.example]\n  deny: [evil.example]\n',
          'test',
          tempDir(),
        ),
      ),
      store,
    );
    guard.approve({ pattern: 'example.test', session: 's' });
    guard.addDeny({ pattern: 'worse.example' });
    expect(store.approvals.all(0).map((a) => a.pattern)).toEqual(['docs.example', 'example.test']);
    expect(store.denies.all(null, true).map((d) => d.pattern)).toEqual([
      'evil.example',
      'worse.example',
    ]);
    expect(new Guard(compilePolicy(config), store).inspect(event(1000)).approved).toBe(true);
  });

  it("review's recent events are the store's", () => {
    const store = new MemoryStore<EventRecord>();
    const guard = new Guard(compilePolicy(config), store);
    const review = new Review(config, pino({ level: 'silent' }), store);
    for (const ts of [1000, 2000]) {
      const e = event(ts);
      const decision = guard.inspect(e);
      guard.commit('s', ts, decision);
      review.observe({ ...eventRecord(e, decision), seq: ts, ts: new Date(ts).toISOString() });
    }
    expect(store.recent('s').map((r) => r.verdict)).toEqual(['REVIEW', 'PAUSE']);
    expect(review.recent('s')).toEqual(store.recent('s'));
  });
});
