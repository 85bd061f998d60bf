import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import type { Decision } from '../../src/guard/guard.js';
import { Guard } from '../../src/guard/guard.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import { eventRecord } from '../../src/journal/records.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { Review } from '../../src/review/review.js';
import type { Presence } from '../../src/action/hold.js';
import { HeldRequests } from '../../src/action/hold.js';
import type { SessionWatcher } from '../../src/review/sessions.js';
import { Sessions } from '../../src/review/sessions.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The guard decides on a copy. `inspect` changes nothing; `commit` installs
 * a decision once its record is written, as a restart installs the record; operator actions
 * that cannot be journaled change nothing and tell no tunnel to freeze or thaw.
 */
const config = parseConfig('version: 1\nworkspace: /tmp/agent-demo\n', 'test', tempDir());
const guard = () => new Guard(compilePolicy(config));
const event = (kind: string, target: string, ts = 1000, session = 's') =>
  normalizeEvent({ kind, target }, { session, source: 'proxy', ts, workspace: '/tmp/agent-demo' });
const API = 'https://example.test/api';

/** A session's state as plain data, to compare states. */
function stateOf(g: Guard, session = 's') {
  const s = g.session(session);
  return s && { counts: Object.fromEntries(s.counts), pausedAt: s.pausedAt, by: s.pausedBy };
}

function decide(g: Guard, kind: string, target: string, ts = 1000): Decision {
  const decision = g.inspect(event(kind, target, ts));
  g.commit('s', ts, decision);
  return decision;
}

describe('the guard decides on a copy', () => {
  it('a decision not committed changes nothing: the same event is judged the same again', () => {
    const g = guard();
    const first = g.inspect(event('network', API));
    expect(first).toMatchObject({ verdict: 'REVIEW', count: 1, counted: { network: 1 } });
    expect(g.inspect(event('network', API))).toEqual(first);
    expect(g.session('s')).toBeUndefined();
    expect([...g.sessions()]).toEqual([]);
  });

  it('a PAUSE not committed pauses nothing and moves no count', () => {
    const g = guard();
    decide(g, 'network', API);
    const state = stateOf(g);
    expect(g.inspect(event('network', API))).toMatchObject({ verdict: 'PAUSE', count: 2 });
    expect(g.inspect(event('write', '/etc/passwd'))).toMatchObject({ verdict: 'PAUSE' });
    expect(stateOf(g)).toEqual(state);
    expect(stateOf(g)).toEqual({ counts: { network: 1 }, pausedAt: null, by: null });
  });

  it('commit installs the decision: its counts, and a PAUSE at the event time by its boundary', () => {
    const g = guard();
    decide(g, 'network', API, 1000);
    expect(decide(g, 'network', API, 2000).verdict).toBe('PAUSE');
    expect(stateOf(g)).toEqual({ counts: { network: 2 }, pausedAt: 2000, by: 'network' });
    expect(g.inspect(event('network', API, 3000))).toMatchObject({ count: 3 });
  });

  it('committing a decision twice is harmless: the state of one commit', () => {
    const once = guard();
    const twice = guard();
    for (const target of [API, '/etc/passwd']) {
      const kind = target === API ? 'network' : 'write';
      const a = once.inspect(event(kind, target));
      once.commit('s', 1000, a);
      const b = twice.inspect(event(kind, target));
      twice.commit('s', 1000, b);
      twice.commit('s', 1000, b);
      expect(stateOf(twice)).toEqual(stateOf(once));
    }
    expect(twice.inspect(event('network', API))).toEqual(once.inspect(event('network', API)));
  });

  it('commit is what a restart does with the event record', () => {
    const live = guard();
    const restarted = guard();
    const steps = [
      ['command', '/tmp/agent-demo/tests'],
      ['network', API],
      ['network', 'https://other.test/'],
      ['write', '/etc/hosts'],
    ] as const;
    steps.forEach(([kind, target], i) => {
      const e = event(kind, target, 1000 + i);
      const decision = live.inspect(e);
      live.commit('s', e.ts, decision);
      const record = { seq: i + 1, ts: new Date(e.ts).toISOString(), ...eventRecord(e, decision) };
      applyRecord(restarted, record);
    });
    expect(stateOf(restarted)).toEqual(stateOf(live));
    expect(stateOf(live)).toMatchObject({ pausedAt: 1002, by: 'network' });
  });

  it('an expired approval is passed over by inspect, and dropped only by a commit past it', () => {
    const g = guard();
    g.approve({ pattern: 'example.test', session: 's', expiresAt: 2000 });
    expect(g.inspect(event('network', API, 1999))).toMatchObject({ approved: true });
    expect(g.inspect(event('network', API, 2000))).toMatchObject({ approved: false });
    expect(g.approvals.all(0)).toHaveLength(1);
    g.commit('s', 1999, g.inspect(event('network', API, 1999)));
    expect(g.approvals.all(0)).toHaveLength(1);
    g.commit('s', 2000, g.inspect(event('network', API, 2000)));
    expect(g.approvals.all(0)).toHaveLength(0);
  });
});

describe('operator actions on a journal that cannot be written', () => {
  const waiting: Presence = { gone: false, onGone: () => () => undefined };

  function desk(journalPath: string) {
    const g = guard();
    g.commit('s', 1000, { verdict: 'PAUSE', boundary: 'network', counted: { network: 2 } });
    const told: string[] = [];
    const watcher: SessionWatcher = {
      paused: (s) => told.push(`paused ${s}`),
      resumed: (s) => told.push(`resumed ${s}`),
      denied: (s) => told.push(`denied ${s}`),
    };
    const journal = new JournalWriter(journalPath, { lastSeq: 0, fsyncMs: 100 });
    const review = new Review(config, pino({ level: 'silent' }));
    const held = new HeldRequests(60_000);
    const sessions = new Sessions(g, journal, held, review, watcher);
    let released: string | null = null;
    void held
      .hold({ session: 's', what: 'GET http://example.test/', rid: 1 }, waiting)
      .then((r) => (released = r));
    return { g, sessions, held, told, released: () => released };
  }

  it('approve, resume and deny throw E_JOURNAL_WRITE and change nothing, telling no tunnel', async () => {
    // /dev/full answers every write with ENOSPC: a disk that is full.
    const { g, sessions, held, told, released } = desk('/dev/full');
    const state = stateOf(g);
    const failed = expect.objectContaining({ code: 'E_JOURNAL_WRITE' });
    expect(() => sessions.approve({ pattern: 'example.test', session: 's' })).toThrow(failed);
    expect(() => sessions.approve({ pattern: 'example.test', session: null })).toThrow(failed);
    expect(() => sessions.resume('s', { reset: true })).toThrow(failed);
    expect(() => sessions.deny('s')).toThrow(failed);
    await Promise.resolve();
    expect(stateOf(g)).toEqual(state);
    expect(g.approvals.all(0)).toEqual([]);
    expect(sessions.held('s')).toHaveLength(1);
    expect(released()).toBeNull();
    expect(told).toEqual([]);
    held.releaseAll();
  });

  it('the same actions, journaled, take effect and tell the tunnels', async () => {
    const { g, sessions, told, released } = desk(join(tempDir(), 'journal.jsonl'));
    sessions.approve({ pattern: 'example.test', session: 's' });
    expect(sessions.resume('s', { reset: true })).toBe(1);
    await Promise.resolve();
    expect(stateOf(g)).toEqual({ counts: {}, pausedAt: null, by: null });
    expect(g.approvals.all(0)).toHaveLength(1);
    expect(released()).toBe('resume');
    expect(told).toEqual(['resumed s']);
  });
});
