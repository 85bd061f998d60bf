import { describe, expect, it } from 'vitest';
import { CALLS_MAX, CALLS_PER_SESSION, HookCalls } from '../../src/ingress/hook-calls.js';
import type { JournalRecord } from '../../src/journal/records.js';

/** HookCalls: runners' call ids → request ids, one result each, in bounded memory. */
describe('HookCalls', () => {
  it('links one result per call id, per session', () => {
    const calls = new HookCalls();
    expect(calls.open('a', 'toolu_1')).toBe(true);
    expect(calls.open('a', 'toolu_1')).toBe(false);
    expect(calls.open('b', 'toolu_1')).toBe(true);
    calls.judged('a', 'toolu_1', 7);
    calls.judged('b', 'toolu_1', 8);
    expect(calls.take('a', 'toolu_1')).toBe(7);
    expect(calls.take('a', 'toolu_1')).toBeUndefined();
    expect(calls.take('b', 'toolu_1')).toBe(8);
  });

  it('a call still being judged has no result to link, and a closed one frees its id', () => {
    const calls = new HookCalls();
    calls.open('a', 'x');
    expect(calls.take('a', 'x')).toBeUndefined();
    calls.open('a', 'y');
    calls.close('a', 'y');
    expect(calls.open('a', 'y')).toBe(true);
  });

  it(`keeps a session's newest ${CALLS_PER_SESSION}: the oldest are forgotten, not misread`, () => {
    const calls = new HookCalls();
    for (let i = 0; i <= CALLS_PER_SESSION; i++) {
      calls.open('a', `c${i}`);
      calls.judged('a', `c${i}`, i);
    }
    expect(calls.take('a', 'c0')).toBeUndefined();
    expect(calls.take('a', 'c1')).toBe(1);
    expect(calls.take('a', `c${CALLS_PER_SESSION}`)).toBe(CALLS_PER_SESSION);
  });

  it(`keeps ${CALLS_MAX} across sessions, the oldest session's going first`, () => {
    const calls = new HookCalls();
    const sessions = CALLS_MAX / CALLS_PER_SESSION + 1;
    for (let s = 0; s < sessions; s++)
      for (let i = 0; i < CALLS_PER_SESSION; i++) calls.judged(`s${s}`, `c${i}`, i);
    expect(calls.take('s0', 'c0')).toBeUndefined();
    expect(calls.take('s0', `c${CALLS_PER_SESSION - 1}`)).toBeUndefined();
    expect(calls.take('s1', 'c0')).toBe(0);
    expect(calls.take(`s${sessions - 1}`, 'c0')).toBe(0);
  });

  it('restores from journal records: asked and judged calls wait, reported ones do not', () => {
    const calls = new HookCalls();
    const base = { ts: '', source: 'ingest', kind: 'read', target: '/w', approved: false } as const;
    const records = [
      { ...base, type: 'event', seq: 1, session: 'a', call: 'x', verdict: 'ALLOW' },
      { ...base, type: 'event', seq: 2, session: 'a', call: 'y', verdict: 'PAUSE', held: true },
      { ...base, type: 'event', seq: 3, session: 'a', call: 'y', verdict: 'ALLOW', rid: 2 },
      { ...base, type: 'event', seq: 4, session: 'a', call: 'z', verdict: 'ALLOW' },
      {
        ts: '',
        type: 'result',
        seq: 5,
        session: 'a',
        rid: 4,
        kind: 'read',
        target: '/w',
        ok: true,
        call: 'z',
      },
    ] as unknown as JournalRecord[];
    for (const r of records) calls.restore(r);
    expect(calls.take('a', 'x')).toBe(1);
    expect(calls.take('a', 'y')).toBe(2);
    expect(calls.take('a', 'z')).toBeUndefined();
  });
});
