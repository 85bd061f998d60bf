import type { Presence } from '../action/hold.js';
import type { Refusal } from '../action/refusal.js';
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

/**
 * What a decision to forward rests on, and so what must still hold for its flow to go on
 * (pipeline/flow-basis.ts): the agent's credentials (its session), the allowlist entry or
 * operator approval that admitted it, and the rules' generation it was decided under.
 */
export interface RulingBasis {
  readonly session: string;
  /** The approval (`c<n>` for a config allowlist entry, `a<seq>` an operator's), or null. */
  readonly approval: {
    readonly id: string;
    readonly pattern: string;
    /** When it expires (ms since the epoch), or null. */
    readonly expiresAt: number | null;
  } | null;
  /** The flows' generation when it was decided (FlowRegistry.generation). */
  readonly generation: number;
}

/**
 * A request let through: its verdict, boundary and reason in `decision` (ALLOW, or a REVIEW
 * that `policy.review: pass` lets go), its request id, and its basis.
 */
export interface Forward<D extends Dial | null = Dial | null> {
  readonly kind: 'forward';
  readonly rid: number;
  readonly event: Event;
  readonly decision: Decision;
  /** The checked address to connect to; null for events that name no host (tool calls). */
  readonly dial: D;
  readonly basis: RulingBasis;
}

/**
 * A request refused: verdict, boundary and reason in `refusal`, for each transport to render
 * (action/refusal.ts); its request id when it was journaled as an event.
 */
export interface Refuse {
  readonly kind: 'refuse';
  readonly rid: number | null;
  readonly refusal: Refusal;
  /** The decision behind a policy refusal (its count); absent for bad input or an outage. */
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
