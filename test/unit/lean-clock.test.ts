import { describe, expect, test } from 'vitest';
import { LeanClock } from '../../src/ingress/lean/lean-clock.js';

/** A connection stand-in whose expiry resolves a promise with the time it came. */
function expiring(due: number) {
  let fired: (at: number) => void = () => undefined;
  const at = new Promise<number>((resolve) => (fired = resolve));
  const c = {
    due,
    expired: 0,
    expire() {
      c.expired++;
      c.due = Infinity;
      fired(Date.now());
    },
  };
  return { c, at };
}

describe('LeanClock', () => {
  test('a deadline fires once, not before it is due; one with nothing due never fires', async () => {
    const clock = new LeanClock(80);
    const start = Date.now();
    const late = expiring(start + 40);
    const none = expiring(Infinity);
    clock.add(none.c);
    clock.add(late.c);
    const at = await late.at;
    expect(at - start).toBeGreaterThanOrEqual(40);
    // The tick after the one that fired sees nothing due.
    const next = expiring(Date.now() + 20);
    clock.add(next.c);
    await next.at;
    expect(late.c.expired).toBe(1);
    expect(none.c.expired).toBe(0);
    clock.remove(late.c);
    clock.remove(none.c);
    clock.remove(next.c);
  });

  test('a deadline moved later before it is due waits for the new one', async () => {
    const clock = new LeanClock(80);
    const start = Date.now();
    const moved = expiring(start + 20);
    clock.add(moved.c);
    moved.c.due = start + 120;
    const at = await moved.at;
    expect(at - start).toBeGreaterThanOrEqual(120);
    clock.remove(moved.c);
  });

  test('a removed connection is never told', async () => {
    const clock = new LeanClock(80);
    const gone = expiring(Date.now() + 10);
    const kept = expiring(Date.now() + 30);
    clock.add(gone.c);
    clock.add(kept.c);
    clock.remove(gone.c);
    await kept.at;
    expect(gone.c.expired).toBe(0);
    clock.remove(kept.c);
  });
});
