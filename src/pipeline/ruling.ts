import type { Presence } from '../action/hold.js';
import type { Refusal } from '../action/respond.js';
import type { Event, EventInput, Source } from '../event/event.js';
import type { Decision } from '../guard/guard.js';

/** One request as an ingress hands it over, once it knows the session. */
export interface Ask {
  readonly session: string;
  readonly source: Source;
  readonly client: string;
  readonly input: EventInput;
  /** What the agent asked for, in its words: `GET http://host/x`, `CONNECT host:443`. */
  readonly what: string;
  /** A CONNECT tunnel: only `network.ports` unless an approval names the port. */
  readonly connect: boolean;
  /** The request body's size (its Content-Length), when known: a held request shows it. */
  readonly bytes?: number | null;
  /** Whether the client still waits for an answer. */
  readonly waiting: Presence;
}

/** An ask for a network request trajgate sends itself: a forward ruling names its address. */
export type NetworkAsk = Ask & { readonly input: EventInput & { readonly kind: 'network' } };

/** Where a forwarded network request goes: the address the egress check allowed. */
export interface Dial {
  readonly address: string;
  readonly port: number;
}

export interface Forward<D extends Dial | null = Dial | null> {
  readonly kind: 'forward';
  readonly rid: number;
  readonly event: Event;
  readonly decision: Decision;
  /** The checked address to connect to; null for events that name no host (tool calls). */
  readonly dial: D;
  /** The flows' generation when it was decided (FlowRegistry.generation). */
  readonly generation: number;
}

export interface Refuse {
  readonly kind: 'refuse';
  readonly rid: number | null;
  readonly refusal: Refusal;
  /** The verdict behind a policy refusal; absent for malformed input or upstream failure. */
  readonly decision?: Decision;
}

/** The client left while its request was held or judged. */
export interface Gone {
  readonly kind: 'gone';
  readonly rid: number | null;
}

/** The session is paused: the request waits (action/hold), its event already journaled. */
export interface Hold {
  readonly kind: 'hold';
  readonly rid: number;
  /** The PAUSE that paused the session, or the record of a request held by an earlier one. */
  readonly decision: Decision;
}

/** What a request finally comes to, as ingress acts on it. */
export type Ruling<D extends Dial | null = Dial | null> = Forward<D> | Refuse | Gone;

/** A ruling that sends nothing. */
export type Unforwarded = Refuse | Gone;

/** Whether a tunnel judged request by request inside may open (see Pipeline.admitTunnel). */
export type TunnelRuling = Unforwarded | { readonly kind: 'open'; readonly rid: number | null };
