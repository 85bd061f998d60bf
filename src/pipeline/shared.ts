import { plainRefusal } from '../action/refusal.js';
import { isTrajgateError } from '../errors.js';
import type { SharedState } from '../guard/store.js';
import type { Decider } from './decide.js';
import { CHANGES } from './decide.js';
import type { Ask, Hold, Ruling } from './ruling.js';

/**
 * A decision when several gateways share the trajectory (state/redis-store). One that changes
 * nothing (an approved request) needs the session's state only: one read, ordered before
 * whatever changes it next. One that changes the session is made under its lease, one at a
 * time across gateways, and takes effect only once the store has what it changed; a store that
 * cannot be reached refuses (503, fail closed).
 */
export async function decideShared(
  decider: Decider,
  shared: SharedState,
  ask: Ask,
  rid: number | null,
  once: boolean,
): Promise<Ruling | Hold> {
  // What this gateway last saw of the session says which is likely; when a change is, straight
  // to the lease (a read first would be a round trip spent for nothing).
  const event = decider.event(ask, rid, once);
  if (!('subject' in event)) return event; // malformed: refused without the store
  try {
    if (decider.likelyReadOnly(event) && (await shared.peek(ask.session))) {
      const ruling = await decider.judge(ask, rid, once, true, event);
      if (ruling !== CHANGES) return ruling;
    }
  } catch (err) {
    return decider.storeFailed(ask, rid, err);
  }
  let lease;
  try {
    lease = await shared.lease(ask.session);
  } catch (err) {
    return decider.storeFailed(ask, rid, err);
  }
  let ruling;
  try {
    ruling = await decider.decide(ask, rid, once, event);
  } catch (err) {
    await lease.release().catch(() => undefined);
    throw err;
  }
  try {
    await lease.release();
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    return { kind: 'refuse', rid: ruling.rid, refusal: plainRefusal(503, err.message) };
  }
  return ruling;
}
