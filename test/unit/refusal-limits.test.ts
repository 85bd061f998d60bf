import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Unwritten } from '../../src/journal/refusal-limits.js';
import {
  MAX_CLIENTS,
  OTHERS,
  PER_SECOND,
  RefusalLimiter,
} from '../../src/journal/refusal-limits.js';

const REFUSAL: Unwritten = { source: 'proxy', status: 407, reason: 'no credentials' };

/** A limiter and the summaries it asked for, as [client, suppressed]. */
function limiter(): { limits: RefusalLimiter; summaries: [string, number][] } {
  const summaries: [string, number][] = [];
  return { limits: new RefusalLimiter((c, n) => summaries.push([c, n])), summaries };
}

/** How many of `count` refusals from `client` at `now` were admitted. */
function admitted(limits: RefusalLimiter, client: string, count: number, now: number): number {
  let n = 0;
  for (let i = 0; i < count; i++) if (limits.admit(client, REFUSAL, now)) n++;
  return n;
}

afterEach(() => vi.useRealTimers());

describe('RefusalLimiter', () => {
  it('admits PER_SECOND a second per address and summarises the rest once the second ends', () => {
    const { limits, summaries } = limiter();
    expect(admitted(limits, 'a', 25, 0)).toBe(PER_SECOND);
    expect(admitted(limits, 'b', 3, 500)).toBe(3);
    expect(summaries).toEqual([]);
    expect(admitted(limits, 'a', 1, 1_000)).toBe(1);
    expect(summaries).toEqual([['a', 5]]);
  });

  it('writes a waiting summary from its timer, without further refusals', () => {
    vi.useFakeTimers();
    const { limits, summaries } = limiter();
    admitted(limits, 'a', PER_SECOND + 7, Date.now());
    vi.advanceTimersByTime(999);
    expect(summaries).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(summaries).toEqual([['a', 7]]);
    vi.advanceTimersByTime(10_000);
    expect(summaries).toHaveLength(1);
  });

  it('bounds the addresses it follows: further ones share one window', () => {
    const { limits, summaries } = limiter();
    for (let i = 0; i < MAX_CLIENTS; i++) admitted(limits, `10.0.${i >> 8}.${i & 255}`, 1, 0);
    expect(admitted(limits, 'new-1', PER_SECOND, 10)).toBe(PER_SECOND);
    expect(admitted(limits, 'new-2', 5, 10)).toBe(0);
    limits.close();
    expect(summaries).toEqual([[OTHERS, 5]]);
  });

  it('an ended window makes room for a new address', () => {
    const { limits } = limiter();
    for (let i = 0; i < MAX_CLIENTS; i++) admitted(limits, `client-${i}`, 1, 0);
    expect(admitted(limits, 'late', 1, 1_000)).toBe(1);
    expect(admitted(limits, 'late', PER_SECOND, 1_000)).toBe(PER_SECOND - 1);
  });

  it('close writes every waiting summary and stops the timer', () => {
    vi.useFakeTimers();
    const { limits, summaries } = limiter();
    admitted(limits, 'a', PER_SECOND + 2, Date.now());
    limits.close();
    expect(summaries).toEqual([['a', 2]]);
    vi.advanceTimersByTime(5_000);
    expect(summaries).toHaveLength(1);
  });
});
