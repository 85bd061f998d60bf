import { describe, expect, it } from 'vitest';
import type { Presence } from '../../src/action/hold.js';
import { HeldRequests } from '../../src/action/hold.js';

/**
 * A resume or deny made while a request's decision was under way (another gateway's, arriving
 * while this one awaited the shared store) reaches the request once it is held, instead of
 * leaving it to wait out the hold time; one made before its decision began does not.
 */
const present: Presence = { gone: false, onGone: () => () => undefined };
const info = (rid: number) => ({ session: 's', what: `GET http://h/${rid}`, rid });

describe('HeldRequests: releases a held request missed', () => {
  it.each(['deny', 'resume'] as const)('a %s between decision and hold lets it go at once', (r) => {
    const held = new HeldRequests(60_000);
    const since = held.epoch('s');
    expect(held.release('s', r)).toEqual([]); // nothing held yet: the request is being decided
    return expect(held.hold(info(1), present, since)).resolves.toBe(r);
  });

  it('a release before the decision began, or of another session, does not', async () => {
    const held = new HeldRequests(60_000);
    held.release('s', 'deny');
    held.release('other', 'resume');
    const waiting = held.hold(info(2), present, held.epoch('s'));
    let settled = false;
    void waiting.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    expect(held.of('s').map((h) => h.rid)).toEqual([2]);
    expect(held.release('s', 'resume').map((h) => h.rid)).toEqual([2]);
    await expect(waiting).resolves.toBe('resume');
    expect(held.ended(2)).toBe('resume');
  });

  it('the epoch counts every release of the session, the last one named', async () => {
    const held = new HeldRequests(60_000);
    const since = held.epoch('s');
    held.release('s', 'resume');
    held.release('s', 'deny');
    expect(held.epoch('s')).toBe(since + 2);
    await expect(held.hold(info(3), present, since)).resolves.toBe('deny');
    expect(held.ended(3)).toBe('deny');
  });
});

describe('HeldRequests.count', () => {
  it('counts holds as they come and go (released, timed out, client gone), once each', async () => {
    const held = new HeldRequests(50);
    let leave: () => void = () => undefined;
    const leaving: Presence = {
      gone: false,
      onGone: (fn) => ((leave = fn), () => undefined),
    };
    const a = held.hold(info(1), present);
    const b = held.hold({ ...info(2), session: 't' }, leaving);
    const c = held.hold({ ...info(3), session: 'u' }, present);
    expect(held.count()).toBe(3);
    held.release('s', 'resume');
    held.release('s', 'resume'); // nothing left to let go: counted once
    await expect(a).resolves.toBe('resume');
    expect(held.count()).toBe(2);
    leave();
    await expect(b).resolves.toBe('gone');
    expect(held.count()).toBe(1);
    await expect(c).resolves.toBe('timeout');
    expect(held.count()).toBe(0);
  });
});
