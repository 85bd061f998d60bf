import type { Flow, FlowKind } from '../action/flows.js';
import type { HeldRequests } from '../action/hold.js';
import type { Refusal } from '../action/refusal.js';
import type { Transfer } from '../action/transfer.js';
import type { Event } from '../event/event.js';
import type { RequiredProtocols } from '../guard/approvals.js';
import type { Guard } from '../guard/guard.js';
import type { EventRecord, ResultRecord, RootsRecord, Unstamped } from '../journal/records.js';
import type { JournalWriter } from '../journal/writer.js';
import { unlinkedResult } from '../journal/rebuild.js';
import type { Metrics } from '../review/metrics.js';
import type { Review } from '../review/review.js';
import type { DecideParts } from './decide.js';
import { Decider } from './decide.js';
import { Refusals } from './refusals.js';
import { decideShared } from './shared.js';
import type { BasisParts } from './flow-basis.js';
import { lapse } from './flow-basis.js';
import type { Unjudged } from './refusals.js';
import type {
  TunnelRuling,
  Ask,
  Dial,
  Forward,
  Hold,
  NetworkAsk,
  Ruling,
  Unforwarded,
} from './ruling.js';

const NO_ONE: ReadonlySet<string> = new Set();

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
  readonly #basis: BasisParts;

  constructor(parts: Omit<DecideParts, 'refusals'> & { readonly held: HeldRequests }) {
    this.#basis = parts;
    this.#guard = parts.guard;
    this.#journal = parts.journal;
    this.#held = parts.held;
    this.#review = parts.review;
    this.#metrics = parts.metrics;
    this.#refusals = new Refusals(parts.journal);
    this.#decider = new Decider({ ...parts, refusals: this.#refusals });
    this.#decider.onMarks = (session) => this.#rulesReach(session);
    parts.flows.onSent = (flow) => this.#sent(flow);
  }

  /** A live flow sent more bytes up: the guard counts them now (volume rules fire mid-flow). */
  #sent(flow: Flow): void {
    const { session, rid } = flow.basis;
    flow.reportedUp = flow.bytesUp;
    // Shared state changes only under the session's lease: the outcome tells the store.
    if (rid === null || this.#guard.shared !== undefined) return;
    if (!this.#reported.has(rid)) this.#reported.set(rid, { base: 0, last: 0 });
    const bytesUp = this.#counted(session, rid, flow.bytesUp);
    if (this.#guard.outcome(session, rid, { failed: false, bytesUp, ts: Date.now() }))
      this.#rulesReach(session);
  }

  /** Flows that reported bytes mid-flow, by request id: what the guard let go of their total. */
  readonly #reported = new Map<number, { base: number; last: number }>();

  /**
   * What of request `rid`'s `total` bytes sent counts now. Bytes it reported that the guard let
   * go since (a resume forgave them, or they aged out of the volume window) do not come back
   * with its next report: a resumed tunnel would pause again at once on what was reviewed.
   */
  #counted(session: string, rid: number, total: number): number {
    const seen = this.#reported.get(rid);
    if (seen === undefined) return total;
    if (seen.last > seen.base && this.#guard.session(session)?.sent.has(rid) !== true)
      seen.base = seen.last;
    seen.last = total;
    return total - seen.base;
  }

  #reaching = false;

  /**
   * Rules reach open channels: each live flow of the session that carries an event is judged
   * again as a new one (Decider.rejudge), so a secret read or a volume limit crossed since it
   * was admitted pauses (freezes it with its session) or closes it, before the change that
   * caused it is answered.
   */
  #rulesReach(session: string): void {
    if (this.#reaching || this.#guard.policy.sequences.length === 0) return;
    this.#reaching = true;
    try {
      for (const flow of this.#basis.flows.of(session)) {
        const { event, rid, kind, target } = flow.basis;
        if (event === null || flow.closed !== null || this.isPaused(session)) continue;
        const why = this.#decider.rejudge(event, rid, `${kind} ${target}`);
        if (why !== null) this.#basis.flows.close(flow, why);
      }
    } finally {
      this.#reaching = false;
    }
  }

  /** Decides alone, or with the other gateways sharing the trajectory. */
  #decide(ask: Ask, rid: number | null, once: boolean): Promise<Ruling | Hold> {
    const shared = this.#guard.shared;
    if (shared === undefined) return this.#decider.decide(ask, rid, once);
    return decideShared(this.#decider, shared, ask, rid, once);
  }

  /** `rid`: a request judged before whose flow was stopped before it was sent (judged again). */
  judge(ask: NetworkAsk, rid?: number | null): Promise<Ruling<Dial>>;
  judge(ask: Ask, rid?: number | null): Promise<Ruling>;
  async judge(ask: Ask, rid: number | null = null): Promise<Ruling> {
    const again = (rid: number, once: boolean) => this.#decide(ask, rid, once);
    // Busy for the idle rule until its ruling: a lookup may keep it waiting with no flow yet.
    return this.#basis.flows.judging(ask.session, () =>
      this.#untilReleased(ask, () => this.#decide(ask, rid, false), again),
    );
  }

  /**
   * A tunnel judged request by request inside (intercepted TLS, plain HTTP read from a CONNECT)
   * has no decision of its own, but while its session is paused it is held like any request:
   * no `200`, no handshake. `open` once the session runs, or once approved once (its requests
   * are still judged one by one, and held while the session is paused).
   */
  admitTunnel(ask: Ask): Promise<TunnelRuling> {
    const admit = (rid: number | null, once = false): TunnelRuling | Hold => {
      if (once || !this.isPaused(ask.session)) return { kind: 'open', rid };
      const event = this.#decider.event(ask, rid);
      return 'subject' in event ? this.#decider.held(ask, event, rid) : event;
    };
    return this.#untilReleased(
      ask,
      async () => admit(null),
      async (rid, once) => admit(rid, once),
    );
  }

  /**
   * Holds while the ruling is a hold; a resume leads to `again`, anything else ends it. A resume
   * or deny of the session made while a decision was under way (another gateway's, arriving
   * while this one awaited the shared store) reaches the request once it is held: it was not
   * held yet to be let go, and would wait out the hold time.
   */
  async #untilReleased<R extends { kind: string }>(
    ask: Ask,
    first: () => Promise<R | Hold>,
    again: (rid: number, once: boolean) => Promise<R | Hold>,
  ): Promise<R | Unforwarded> {
    let since = this.#held.epoch(ask.session);
    let ruling = await first();
    while (isHold(ruling)) {
      const { rid, decision } = ruling;
      const release = await this.#held.hold(
        { session: ask.session, what: ask.what, rid, bytes: ask.bytes },
        ask.waiting,
        since,
      );
      if (release === 'gone') return { kind: 'gone', rid };
      if (release !== 'resume' && release !== 'once') {
        return this.#decider.refuse(rid, decision, ask, release === 'deny' ? 'denied' : release);
      }
      since = this.#held.epoch(ask.session);
      try {
        ruling = await again(rid, release === 'once');
      } finally {
        this.#held.judgedAgain(rid);
      }
    }
    return ruling;
  }

  /**
   * Registers the channel of a forwarded ruling (action/flow-registry), frozen when its session
   * paused meanwhile; when anything was judged again since the decision (a revoke while its
   * answer was on its way), its basis is checked at once and it closes before a byte goes.
   */
  flow(kind: FlowKind, ruling: Forward<Dial>): Flow {
    const { event, rid, dial, basis } = ruling;
    const flow = this.#basis.flows.open({
      session: basis.session,
      kind,
      target: event.target,
      rid,
      event,
      approved: basis.approval !== null,
      expiresAt: basis.approval?.expiresAt ?? null,
      dial,
    });
    if (basis.generation === this.#basis.flows.generation) return flow;
    const why = lapse(this.#basis, flow.basis, NO_ONE);
    if (why !== null) this.#basis.flows.close(flow, `${why} (changed while it was decided)`);
    return flow;
  }

  /**
   * Registers a channel whose own decision is not the basis (a tunnel judged request by request
   * inside, a tool call's answer): it follows its session and its agent's credentials.
   */
  sessionFlow(kind: FlowKind, session: string, target: string, rid: number | null): Flow {
    return this.#basis.flows.open({
      session,
      kind,
      target,
      rid,
      event: null,
      approved: false,
      expiresAt: null,
      dial: null,
    });
  }

  /** Whether requests inside a CONNECT to `target` must be read to be judged (see Guard). */
  readsTunnel(session: string, target: string): boolean {
    return this.#guard.mustRead(this.#tunnelEvent(session, target));
  }

  /** What a tunnel to `target` must carry, by the approvals covering it now; null: anything. */
  tunnelProtocols(session: string, target: string): RequiredProtocols | null {
    return this.#guard.protocolsFor(this.#tunnelEvent(session, target));
  }

  /** A CONNECT to `target` as an event, for asking about it without judging it. */
  #tunnelEvent(session: string, target: string): Event {
    return this.#decider.normalize({ session, input: { kind: 'network', target } });
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
    const bytesUp = this.#counted(session, rid, transfer.bytesUp);
    this.#reported.delete(rid);
    const ts = Date.now();
    try {
      this.#journal.appendLater(
        {
          type: 'outcome',
          rid,
          session,
          status: transfer.status,
          bytesUp: transfer.bytesUp,
          bytesDown: transfer.bytesDown,
          error: transfer.error,
          failed: transfer.failed,
          sni: transfer.sni,
          protocol: transfer.protocol,
          via: transfer.via,
          grpcStatus: transfer.grpcStatus,
          durationMs: Math.round(durationMs),
        },
        ts,
      );
    } catch {
      // The decision itself is on disk; a lost outcome is reported by the next append.
      return;
    }
    const failed = transfer.failed === true;
    // A failure's marks or the bytes it sent may make the session's open flows drift.
    const reaches = this.#guard.outcome(session, rid, { failed, bytesUp, ts });
    if (reaches && this.#guard.shared === undefined) this.#rulesReach(session);
  }

  /** The session's recent events, oldest first (the operators' ring). */
  recent(session: string): readonly EventRecord[] {
    return this.#review.recent(session);
  }

  /**
   * Journals a runner's report of how a call ended; `ok: false` is a failure of the call's
   * event for trajectory rules, and one of no known call (`unlinked`) a failure of the
   * session. Throws E_JOURNAL_WRITE.
   */
  result(record: Unstamped<ResultRecord>): number {
    const ts = Date.now();
    const seq = this.#journal.append(record, { ts });
    // A runner's failure sets marks too (one of no known call always does): the session's
    // open flows are judged again.
    const reaches =
      record.rid === null
        ? unlinkedResult(this.#guard, record, seq, ts)
        : this.#guard.outcome(record.session, record.rid, { failed: !record.ok, bytesUp: 0, ts });
    if (reaches && this.#guard.shared === undefined) this.#rulesReach(record.session);
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
