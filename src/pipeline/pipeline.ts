import type { HeldRequests } from '../action/hold.js';
import type { Refusal } from '../action/respond.js';
import type { Transfer } from '../action/transfer.js';
import type { Event } from '../event/event.js';
import type { Approval } from '../guard/approvals.js';
import type { Guard } from '../guard/guard.js';
import type { EventRecord, ResultRecord, RootsRecord, Unstamped } from '../journal/records.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Metrics } from '../review/metrics.js';
import type { Review } from '../review/review.js';
import type { DecideParts } from './decide.js';
import { Decider } from './decide.js';
import { Refusals } from './refusals.js';
import { decideShared } from './shared.js';
import type { Unjudged } from './refusals.js';
import type { TunnelRuling, Ask, Dial, Hold, NetworkAsk, Ruling, Unforwarded } from './ruling.js';

const isHold = (r: { kind: string }): r is Hold => r.kind === 'hold';

/**
 * What ingress calls: a request is judged (Decider) and, while its session is paused, held
 * (action/hold) and judged again when an operator resumes it, until it comes to forward,
 * refuse or gone; ingress then hands it to the action for its kind of connection. Also
 * journals what decides nothing: outcomes, refusals before judging, runners' results.
 */
export class Pipeline {
  readonly #decider: Decider;
  readonly #refusals: Refusals;
  readonly #guard: Guard;
  readonly #journal: JournalWriter;
  readonly #held: HeldRequests;
  readonly #review: Review;
  readonly #metrics: Metrics;

  constructor(parts: Omit<DecideParts, 'refusals'> & { readonly held: HeldRequests }) {
    this.#guard = parts.guard;
    this.#journal = parts.journal;
    this.#held = parts.held;
    this.#review = parts.review;
    this.#metrics = parts.metrics;
    this.#refusals = new Refusals(parts.journal);
    this.#decider = new Decider({ ...parts, refusals: this.#refusals });
  }

  /** Decides alone, or with the other gateways sharing the trajectory. */
  #decide(ask: Ask, rid: number | null, once: boolean): Promise<Ruling | Hold> {
    const shared = this.#guard.shared;
    if (shared === undefined) return this.#decider.decide(ask, rid, once);
    return decideShared(this.#decider, shared, ask, rid, once);
  }

  judge(ask: NetworkAsk): Promise<Ruling<Dial>>;
  judge(ask: Ask): Promise<Ruling>;
  async judge(ask: Ask): Promise<Ruling> {
    const first = await this.#decide(ask, null, false);
    return this.#untilReleased(ask, first, (rid, once) => this.#decide(ask, rid, once));
  }

  /**
   * A tunnel judged request by request inside (intercepted TLS, plain HTTP read from a CONNECT)
   * has no decision of its own, but while its session is paused it is held like any request:
   * no `200`, no handshake. `open` once the session runs.
   */
  admitTunnel(ask: Ask): Promise<TunnelRuling> {
    const admit = (rid: number | null): TunnelRuling | Hold => {
      if (!this.isPaused(ask.session)) return { kind: 'open', rid };
      const event = this.#decider.event(ask, rid);
      return 'subject' in event ? this.#decider.held(ask, event, rid) : event;
    };
    return this.#untilReleased(ask, admit(null), async (rid) => admit(rid));
  }

  /** Holds while the ruling is a hold; a resume leads to `again`, anything else ends it. */
  async #untilReleased<R extends { kind: string }>(
    ask: Ask,
    first: R | Hold,
    again: (rid: number, once: boolean) => Promise<R | Hold>,
  ): Promise<R | Unforwarded> {
    let ruling = first;
    while (isHold(ruling)) {
      const { rid, decision } = ruling;
      const release = await this.#held.hold(
        { session: ask.session, what: ask.what, rid, bytes: ask.bytes },
        ask.waiting,
      );
      if (release === 'gone') return { kind: 'gone', rid };
      if (release !== 'resume' && release !== 'once') {
        return this.#decider.refuse(rid, decision, ask, release === 'deny' ? 'denied' : release);
      }
      ruling = await again(rid, release === 'once');
    }
    return ruling;
  }

  /** Whether requests inside a CONNECT to `target` must be read to be judged (see Guard). */
  inspects(session: string, target: string): boolean {
    return this.#guard.needsInspection(
      this.#decider.normalize({ session, input: { kind: 'network', target } }),
    );
  }

  /** The approval behind an allowed event, if any. */
  approvalFor(event: Event): Approval | undefined {
    return this.#guard.approvalFor(event);
  }

  isPaused(session: string): boolean {
    return this.#guard.session(session)?.pausedAt != null;
  }

  /** The session's workspace (a real path), against which its relative targets resolve. */
  workspaceFor(session: string): string {
    return this.#guard.policy.workspaceFor(session);
  }

  /** Journals the roots of a client's roots/list answer removed before the server saw them. */
  rootsRemoved(record: Unstamped<RootsRecord>): void {
    try {
      this.#journal.append(record);
    } catch {
      // The roots are removed either way; nothing was decided about a trajectory.
    }
  }

  /**
   * Journals how a request ended (written with the next record, ahead of any decision made
   * after it), then tells the guard: a failure sets trajectory marks, bytes sent count.
   */
  outcome(rid: number, session: string, transfer: Transfer, durationMs: number): void {
    if (transfer.status === 502 || transfer.status === 504) {
      this.#metrics.upstreamErrors.inc({ status: String(transfer.status) });
    }
    const ts = Date.now();
    try {
      this.#journal.appendLater(
        {
          type: 'outcome',
          ref: rid,
          session,
          status: transfer.status,
          bytesUp: transfer.bytesUp,
          bytesDown: transfer.bytesDown,
          error: transfer.error,
          failed: transfer.failed,
          durationMs: Math.round(durationMs),
        },
        ts,
      );
    } catch {
      // The decision itself is on disk; a lost outcome is reported by the next append.
      return;
    }
    const failed = transfer.failed === true;
    this.#guard.outcome(session, rid, { failed, bytesUp: transfer.bytesUp, ts });
  }

  /** The session's recent events, oldest first (the operators' ring). */
  recent(session: string): readonly EventRecord[] {
    return this.#review.recent(session);
  }

  /**
   * Journals a runner's report of how a call ended; `ok: false` is a failure of the call's
   * event for trajectory rules. Throws E_JOURNAL_WRITE.
   */
  result(record: Unstamped<ResultRecord>): number {
    const ts = Date.now();
    const seq = this.#journal.append(record, { ts });
    if (record.ref !== null) {
      this.#guard.outcome(record.session, record.ref, { failed: !record.ok, bytesUp: 0, ts });
    }
    return seq;
  }

  /** A request refused before it became an event (malformed, no credentials), journaled. */
  refusal(ask: Unjudged, status: number, reason: string): Refusal {
    return this.#refusals.refuse(ask, status, reason);
  }

  /** Writes the summaries of refusals left out (at shutdown, before the journal closes). */
  close(): void {
    this.#refusals.close();
  }
}
