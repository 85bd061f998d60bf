import { describe, expect, it } from 'vitest';
import type { StoreMonitor } from '../../src/state/connect.js';
import { Liveness } from '../../src/state/liveness.js';

/** A monitor that keeps what it was told of the store's health, in order. */
function told(): StoreMonitor & { ups: boolean[] } {
  const ups: boolean[] = [];
  return {
    ups,
    storeOp: () => undefined,
    storeError: () => undefined,
    storeUp: (up) => ups.push(up),
  };
}

const timedOut = () => new Error('Command timed out');

describe('Liveness: the store is up while it answers in time', () => {
  it('a timed-out command marks it down, the next answer up; each change told once', () => {
    const monitor = told();
    const live = new Liveness(monitor, 800);
    live.connection(null);
    expect(live.health()).toEqual({ up: true, error: null });
    live.failed(timedOut());
    live.failed(timedOut());
    expect(live.health()).toEqual({
      up: false,
      error: 'no answer within 800 ms (state.redis.timeout)',
    });
    live.answered();
    live.answered();
    expect(live.health().up).toBe(true);
    expect(monitor.ups).toEqual([false, true]);
  });

  it('an error answer is an answer: the store stays up', () => {
    const monitor = told();
    const live = new Liveness(monitor, 1_000);
    live.connection(null);
    live.failed(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'));
    live.failed('not an Error');
    expect(live.health().up).toBe(true);
    expect(monitor.ups).toEqual([]);
  });

  it('the connection down says why first; a new connection clears what went unanswered', () => {
    const monitor = told();
    const live = new Liveness(monitor, 1_000);
    live.connection('connect ENOENT /run/redis.sock');
    // Down from the start: trajgate_store_up (1 until told) goes 0.
    expect(monitor.ups).toEqual([false]);
    live.failed(timedOut());
    expect(live.health().error).toBe('connect ENOENT /run/redis.sock');
    live.connection(null);
    expect(live.health()).toEqual({ up: true, error: null });
    expect(monitor.ups).toEqual([false, true]);
  });

  it('a store that came back empty is down until a rebuild, however fast it answers', () => {
    const monitor = told();
    const live = new Liveness(monitor, 1_000);
    live.connection(null);
    live.emptied('came back empty');
    live.answered();
    expect(live.health()).toEqual({ up: false, error: 'came back empty' });
    live.emptied(null);
    expect(live.health().up).toBe(true);
    expect(monitor.ups).toEqual([false, true]);
  });

  it('probes a quarter of the timeout apart, at least 50 ms and at most 1 s', () => {
    expect(new Liveness(told(), 1_000).every).toBe(250);
    expect(new Liveness(told(), 100).every).toBe(50);
    expect(new Liveness(told(), 30_000).every).toBe(1_000);
  });
});
