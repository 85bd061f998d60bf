import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Flow } from '../../src/action/flows.js';
import type { Forwarded } from '../../src/action/response-relay.js';
import { ResponseRelay } from '../../src/action/response-relay.js';

/** A live flow that records whether the relay attached to it. */
function liveFlow() {
  const seen = { attached: false };
  const flow = {
    live: true,
    closed: null,
    bytesUp: 0,
    attach: () => (seen.attached = true),
  } as unknown as Flow;
  return { flow, seen };
}

describe('ResponseRelay when the agent is gone before the upstream is reached', () => {
  it('aborts at connect: nothing is sent, the outcome says the client closed', () => {
    const res = Object.assign(new EventEmitter(), { destroyed: true, writableFinished: false });
    const { flow, seen } = liveFlow();
    let outcome: Forwarded | undefined;
    const relay = new ResponseRelay(
      res as unknown as ServerResponse,
      '127.0.0.1:9',
      undefined,
      (t) => (outcome = t),
      flow,
    );
    const aborted: Error[] = [];
    relay.onConnect((err) => aborted.push(err));
    expect(aborted.map((e) => e.message)).toEqual(['client closed']);
    expect(seen.attached).toBe(false);
    relay.onError(aborted[0] as Error);
    expect(outcome).toMatchObject({ status: null, error: 'client closed' });
  });

  it('an agent still there: attached, not aborted', () => {
    const res = Object.assign(new EventEmitter(), { destroyed: false, writableFinished: false });
    const { flow, seen } = liveFlow();
    const relay = new ResponseRelay(
      res as unknown as ServerResponse,
      '127.0.0.1:9',
      undefined,
      () => {},
      flow,
    );
    const aborted: Error[] = [];
    relay.onConnect((err) => aborted.push(err));
    expect(aborted).toEqual([]);
    expect(seen.attached).toBe(true);
  });
});
