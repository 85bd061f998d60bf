import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FlowRegistry } from '../../src/action/flow-registry.js';
import { HeldRequests } from '../../src/action/hold.js';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import type { IdleFacts } from '../../src/guard/idle.js';
import { keptBecause } from '../../src/guard/idle.js';
import { fresh, MemoryStore } from '../../src/guard/store.js';
import { HookCalls } from '../../src/ingress/hook-calls.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { IdleSweep } from '../../src/gateway/idle-sweep.js';
import { SessionIndex } from '../../src/journal/session-index.js';
import { Denials } from '../../src/review/pause-ends.js';
import { Review } from '../../src/review/review.js';
import { captureState } from '../../src/review/snapshot.js';
import { tempDir } from '../helpers/tmp.js';

const IDLE = 60_000;
const NOW = 10_000_000;
const policy = compilePolicy(
  parseConfig(
    `version: 1
workspace: /tmp/agent-demo
policy:
  sequences:
    - name: fetch-then-run
      after: { kind: network }
      then: { kind: command }
      within: 1h
      verdict: PAUSE
    - name: up
      volume: { up: 1MB, within: 2h }
      verdict: REVIEW
  budgets:
    - { name: calls, requests: 5, within: 1h }
`,
    'test',
    tempDir(),
  ),
);
const rules = policy.sequences;
const budget = (start: number) => ({ start, used: 1, extra: 0, hosts: null });

const idle = (over: Partial<IdleFacts> = {}): IdleFacts => ({
  state: undefined,
  flagged: 0,
  ownRules: false,
  held: false,
  flows: false,
  judging: false,
  lastActivity: NOW - IDLE,
  ...over,
});

function state(edit: (s: ReturnType<typeof fresh>) => void) {
  const s = fresh();
  edit(s);
  return s;
}

const mark = (rule: string, ts: number) => ({ rule, seq: 1, eventNo: 1, ts, what: 'x' });

describe('which idle sessions are kept (guard/idle.ts)', () => {
  const table: [string, IdleFacts, string | null][] = [
    ['idle long enough, nothing remembered', idle(), null],
    ['idle long enough, an empty state', idle({ state: fresh() }), null],
    ['not idle long enough', idle({ lastActivity: NOW - IDLE + 1 }), 'active'],
    ['paused', idle({ state: state((s) => (s.pausedAt = 1)) }), 'paused'],
    ['flagged', idle({ flagged: 1 }), 'flagged'],
    ['a held request', idle({ held: true }), 'held requests'],
    ['an open flow', idle({ flows: true }), 'open flows'],
    [
      'a request being judged (its lookup awaited)',
      idle({ judging: true }),
      'requests being judged',
    ],
    ['an approval of its own', idle({ ownRules: true }), 'approvals of its own'],
    ['a nonzero count', idle({ state: state((s) => s.counts.set('network', 1)) }), 'counts'],
    ['counts reset to zero', idle({ state: state((s) => s.counts.set('network', 0)) }), null],
    [
      'a mark within its rule reach',
      idle({ state: state((s) => s.marks.set('fetch-then-run', mark('fetch-then-run', NOW))) }),
      'marks',
    ],
    [
      'a mark past its rule window',
      idle({
        state: state((s) => s.marks.set('fetch-then-run', mark('fetch-then-run', NOW - 3_600_001))),
      }),
      null,
    ],
    [
      'a mark of a rule no longer configured',
      idle({ state: state((s) => s.marks.set('gone', mark('gone', NOW))) }),
      null,
    ],
    [
      'bytes sent within a volume window',
      idle({ state: state((s) => s.sent.set(1, { ts: NOW - 7_000_000, bytes: 5 })) }),
      'bytes sent',
    ],
    [
      'bytes sent before every volume window',
      idle({ state: state((s) => s.sent.set(1, { ts: NOW - 7_200_001, bytes: 5 })) }),
      null,
    ],
    [
      "a budget's window still open",
      idle({ state: state((s) => s.budgets.set('calls', budget(NOW - 3_599_999))) }),
      'budgets',
    ],
    [
      "a budget's window ended",
      idle({ state: state((s) => s.budgets.set('calls', budget(NOW - 3_600_000))) }),
      null,
    ],
    [
      'a budget no longer configured',
      idle({ state: state((s) => s.budgets.set('gone', budget(NOW))) }),
      null,
    ],
  ];
  it.each(table)('%s', (_, facts, kept) => {
    expect(keptBecause(facts, rules, NOW, IDLE, policy.budgets)).toBe(kept);
  });
});

/** A gateway's parts in memory, with a journal that keeps what it is given. */
function gatewayParts(config = 'version: 1\nworkspace: /tmp/agent-demo\n') {
  const cfg = parseConfig(config, 'test', tempDir());
  const store = new MemoryStore<EventRecord>();
  const guard = new Guard(compilePolicy(cfg), store);
  const review = new Review(cfg, pino({ level: 'silent' }), store);
  const held = new HeldRequests(60_000);
  const flows = new FlowRegistry(
    60_000,
    () => true,
    () => false,
  );
  const calls = new HookCalls();
  const written: JournalRecord[] = [];
  let seq = 0;
  let failing = false;
  const journal = {
    append(record: Omit<JournalRecord, 'seq' | 'ts' | 'prev'>): number {
      if (failing) throw new Error('disk full');
      written.push({ ...record, seq: ++seq, ts: new Date(NOW).toISOString() } as JournalRecord);
      return seq;
    },
  };
  let evicted = 0;
  let now = NOW;
  const parts = { guard, review, held, flows, calls, journal, log: pino({ level: 'silent' }) };
  const sweep = new IdleSweep({ ...parts, evicted: () => evicted++, now: () => now }, IDLE);
  /** An event judged, committed and observed, as the pipeline does, at `ts`. */
  const decide = (session: string, kind: string, target: string, ts: number) => {
    const event = normalizeEvent(
      { kind, target },
      { session, source: 'proxy', ts, workspace: '/tmp/agent-demo' },
    );
    const decision = guard.inspect(event);
    const record = {
      ...eventRecord(event, decision),
      seq: ++seq,
      ts: new Date(ts).toISOString(),
    } as EventRecord;
    written.push(record);
    guard.commit(session, ts, decision, { seq: record.seq, kind, target });
    review.observe(record);
  };
  return {
    guard,
    store,
    review,
    held,
    sweep,
    written,
    decide,
    evicted: () => evicted,
    failing: (f: boolean) => void (failing = f),
    at: (ms: number) => void (now = ms),
  };
}

describe('the idle sweep (gateway/idle-sweep.ts)', () => {
  it('journals and forgets a session idle for policy.sessionIdle, keeping paused and flagged ones', () => {
    const g = gatewayParts();
    g.decide('quiet', 'read', '/tmp/agent-demo/a.txt', NOW - 2 * IDLE);
    g.decide('flagged', 'network', 'https://example.test/', NOW - 2 * IDLE);
    g.decide('paused', 'write', '/etc/passwd', NOW - 2 * IDLE);
    g.decide('recent', 'read', '/tmp/agent-demo/b.txt', NOW - 10);
    expect(g.guard.session('paused')?.pausedAt).not.toBeNull();
    expect(g.sweep.sweep()).toBe(1);
    const evict = g.written.filter((r) => r.type === 'evict');
    expect(evict).toEqual([
      expect.objectContaining({
        type: 'evict',
        session: 'quiet',
        idleSince: new Date(NOW - 2 * IDLE).toISOString(),
      }),
    ]);
    expect([...g.review.sessions()].sort()).toEqual(['flagged', 'paused', 'recent']);
    expect(g.review.activity('quiet')).toBeNull();
    expect(g.review.recent('quiet')).toEqual([]);
    expect(g.evicted()).toBe(1);
    // Later, the recent one is idle too; the others stay whatever the time.
    g.at(NOW + 10 * IDLE);
    expect(g.sweep.sweep()).toBe(1);
    expect([...g.review.sessions()].sort()).toEqual(['flagged', 'paused']);
  });

  it('a restart applying the journal forgets the same sessions; one coming back starts at zero', () => {
    const g = gatewayParts();
    g.decide('a', 'read', '/tmp/agent-demo/a.txt', NOW - 2 * IDLE);
    g.decide('b', 'network', 'https://example.test/', NOW - 2 * IDLE);
    g.sweep.sweep();
    const restarted = gatewayParts();
    for (const record of g.written) {
      applyRecord(restarted.guard, record);
      restarted.review.restore(record);
    }
    expect([...restarted.review.sessions()]).toEqual([...g.review.sessions()]);
    expect([...restarted.guard.sessions()].map(([id]) => id)).toEqual(['b']);
    g.decide('a', 'read', '/tmp/agent-demo/c.txt', NOW);
    expect(g.review.activity('a')).toEqual({ lastActivity: NOW, events: 1, flagged: 0 });
  });

  it("a rotation's snapshot holds only the sessions still remembered", () => {
    const g = gatewayParts();
    g.decide('gone', 'read', '/tmp/agent-demo/a.txt', NOW - 2 * IDLE);
    g.decide('kept', 'network', 'https://example.test/', NOW - 2 * IDLE);
    g.sweep.sweep();
    const denials = new Denials();
    const state = captureState({ guard: g.guard, store: g.store, review: g.review, denials });
    expect(state.trails.map(([id]) => id)).toEqual(['kept']);
    expect(state.recent.map(([id]) => id)).toEqual(['kept']);
    expect(state.sessions.map(([id]) => id)).toEqual(['kept']);
  });

  it('a session whose evict record cannot be written is kept', () => {
    const g = gatewayParts();
    g.decide('a', 'read', '/tmp/agent-demo/a.txt', NOW - 2 * IDLE);
    g.failing(true);
    expect(g.sweep.sweep()).toBe(0);
    expect([...g.review.sessions()]).toEqual(['a']);
    g.failing(false);
    expect(g.sweep.sweep()).toBe(1);
  });

  it('looks at a bounded number of sessions per sweep, going on where it stopped', () => {
    const g = gatewayParts();
    const n = 5_000 + 10;
    for (let i = 0; i < n; i++) g.decide(`s${i}`, 'read', '/tmp/agent-demo/a', NOW - 2 * IDLE);
    expect(g.sweep.sweep()).toBe(5_000);
    expect(g.sweep.sweep()).toBe(10);
    expect(g.review.size).toBe(0);
  });
});

describe('an evict record read back', () => {
  it('without a session is a corrupt journal', () => {
    const g = gatewayParts();
    const bad = { seq: 1, ts: new Date(NOW).toISOString(), type: 'evict' } as JournalRecord;
    expect(() => applyRecord(g.guard, bad)).toThrow(/evict record has no "session"/);
  });

  it("empties the session's event index and keeps the others'", () => {
    const index = new SessionIndex();
    index.add({ type: 'event', session: 'a' }, 1, 0, 10);
    index.add({ type: 'event', session: 'b' }, 2, 11, 10);
    index.add({ type: 'evict', session: 'a' }, 3, 22, 10);
    expect(index.page('a', Infinity, 10).events).toEqual([]);
    expect(index.page('b', Infinity, 10).events.map((e) => e.seq)).toEqual([2]);
  });
});
