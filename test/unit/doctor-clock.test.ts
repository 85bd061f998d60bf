import { describe, expect, it } from 'vitest';
import { skewMs } from '../../src/cli/doctor-gateway.js';

describe('skewMs: a whole-second remote clock against the local interval it was read in', () => {
  it.each([
    ['inside the interval', 10_500, 10_700, 10_000, 0],
    ['its second overlaps the start', 10_900, 11_000, 10_000, 0],
    ['behind by 3 s', 14_200, 14_300, 10_000, 3_200],
    ['ahead by 5 s', 10_000, 10_100, 15_100, 5_000],
  ])('%s', (_name, before, after, remote, skew) => {
    expect(skewMs(before, after, remote)).toBe(skew);
  });
});
