import type { Egress } from './action/egress.js';
import type { HoldEnd, Refusal } from './action/respond.js';
import { plainRefusal, verdictRefusal } from './action/respond.js';
import type { Transfer } from './action/transfer.js';
import type { Config } from './config/load.js';
import { isTrajgateError } from './errors.js';
import type { Event, EventInput, Source } from './event/event.js';
import { normalizeEvent } from './event/normalize.js';
import type { Approval } from './guard/approvals.js';
import type { Decision, Guard } from './guard/guard.js';
import type {
  PauseRecord,
  RefusalRecord,
  ResultRecord,
  RootsRecord,
  Summary,
  Unstamped,
} from './journal/records.js';
import { eventRecord } from './journal/records.js';
import { boundedTarget, PER_SECOND, RefusalLimiter } from './journal/refusal-limits.js';
import type { JournalWriter } from './journal/writer.js';
import type { Metrics } from './review/metrics.js';
import type { Review } from './review/review.js';
import type { Presence, Sessions } from './review/sessions.js';

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
  /** Whether the client still waits for an answer. */
  readonly waiting: Presence;
}

export type Ruling =
  | {
      readonly kind: 'forward';
      readonly rid: number;
      readonly event: Event;
      readonly decision: Decision;
      /** The checked address to connect to (network events only). */
      readonly address: string | null;
    }
  | {
      readonly kind: 'refuse';
      readonly rid: number | null;
      readonly refusal: Refusal;
      /** The verdict behind a policy refusal; absent for malformed input or upstream failure. */
      readonly decision?: Decision;
    }
  | { readonly kind: 'gone'; readonly rid: number | null };

/** A ruling that sends nothing. */
export type Unforwarded = Exclude<Ruling, { kind: 'forward' }>;

/** How a tunnel judged request by request inside may open (see Pipeline.admitTunnel). */
export type Admission = Unforwarded | { readonly kind: 'open'; readonly rid: number | null };

const HELD: Decision = {
  verdict: 'PAUSE',
  boundary: null,
  count: 0,
  reason: 'session paused: held until an operator decides',
  approved: false,
  approvedBy: null,
  counted: null,
};

/**
 * The data path between ingress and action: normalise → (egress check) → guard → journal →
 * forward, refuse or hold. Every decision is journaled before it takes effect; a journal that
 * cannot be written refuses the request (fail closed) and changes nothing.
 */
export class Pipeline {
  /** Bounds refusal records without a session (see refusal). */
  readonly #refusals = new RefusalLimiter((client, suppressed, last) =>
    this.#appendRefusal({
      type: 'refusal',
      source: last.source,
      client,
      status: last.status,
      reason: `${suppressed} more refusals within one second, past ${PER_SECOND}, not written one by one; the last: ${last.reason}`,
      suppressed,
    }),
  );

  constructor(
    private readonly config: Config,
    private readonly guard: Guard,
    private readonly journal: JournalWriter,
    private readonly sessions: Sessions,
    private readonly egress: Egress,
    private readonly review: Review,
    private readonly metrics: Metrics,
  ) {}

  /** `once`: a held request an operator approved this once ("approve once"), judged approved. */
  async judge(ask: Ask, rid: number | null = null, once = false): Promise<Ruling> {
    let event = this.#eventOf(ask, rid, once);
    if (!('subject' in event)) return event;
    if (this.sessions.isPaused(ask.session))
      return this.#hold(ask, event, null, rid, this.#again(ask));
    let address: string | null = null;
    let failure: Refusal | null = null;
    let preview: Decision | null = null;
    const subject = event.subject;
    if (ask.connect && subject.type === 'network' && !this.#portAllowed(event, subject.port)) {
      event = { ...event, denied: `port ${subject.port} not allowed` };
    } else {
      preview = this.guard.inspect(event);
      if (subject.type === 'network' && this.#mayForward(preview)) {
        const pending = this.egress.check(subject.host, subject.port);
        const check = pending instanceof Promise ? await pending : pending;
        if (check.ok) address = check.address;
        else if (check.denied) event = { ...event, denied: check.reason };
        else failure = plainRefusal(502, check.reason);
        if (ask.waiting.gone) return { kind: 'gone', rid };
        if (this.sessions.isPaused(ask.session))
          return this.#hold(ask, event, null, rid, this.#again(ask));
      }
    }
    // An approval counts nothing, so an approved preview is the decision (unless denied since).
    const decision =
      preview?.approved && event.denied === undefined ? preview : this.guard.inspect(event);
    const { verdict } = decision;
    const pausing = verdict === 'PAUSE' ? this.#holding(ask) : null;
    const id = this.#record(event, decision, rid, false, pausing);
    if (id === null) return this.#failClosed(rid);
    if (verdict === 'PAUSE') {
      // Journaled and installed: now open tunnels freeze.
      this.sessions.paused(ask.session);
      if (this.config.policy.pause === 'block') return this.#refuse(id, decision, ask, 'blocked');
      return this.#hold(ask, event, decision, id, this.#again(ask));
    }
    if (
      verdict === 'REVIEW' &&
      (this.config.policy.review === 'block' ||
        event.denied !== undefined ||
        decision.deniedBy !== undefined)
    ) {
      return this.#refuse(id, decision, ask, 'blocked');
    }
    if (failure) return { kind: 'refuse', rid: id, refusal: failure };
    if (address === null && subject.type === 'network') {
      // Allowed although the preview said otherwise (an approval arrived meanwhile): check now.
      const check = await this.egress.check(subject.host, subject.port);
      if (!check.ok)
        return {
          kind: 'refuse',
          rid: id,
          refusal: plainRefusal(check.denied ? 403 : 502, check.reason),
        };
      address = check.address;
    }
    return { kind: 'forward', rid: id, event, decision, address };
  }

  /**
   * A tunnel judged request by request inside (intercepted TLS, plain HTTP read from a CONNECT)
   * has no decision of its own, but while its session is paused it is held like any request:
   * no `200`, no handshake. `open` once the session runs.
   */
  async admitTunnel(ask: Ask, rid: number | null = null): Promise<Admission> {
    if (!this.sessions.isPaused(ask.session)) return { kind: 'open', rid };
    const event = this.#eventOf(ask, rid);
    if (!('subject' in event)) return event;
    return this.#hold(ask, event, null, rid, (id) => this.admitTunnel(ask, id));
  }

  /** Whether requests inside a CONNECT to `target` must be read to be judged (see Guard). */
  inspects(session: string, target: string): boolean {
    return this.guard.needsInspection(
      this.#normalize({ session, input: { kind: 'network', target } }),
    );
  }

  /** The approval behind an allowed event, if any. */
  approvalFor(event: Event): Approval | undefined {
    return this.guard.approvalFor(event);
  }

  isPaused(session: string): boolean {
    return this.sessions.isPaused(session);
  }

  /** The session's workspace (a real path), against which its relative targets resolve. */
  workspaceFor(session: string): string {
    return this.guard.policy.workspaceFor(session);
  }

  /** Journals the roots of a client's roots/list answer removed before the server saw them. */
  rootsRemoved(record: Unstamped<RootsRecord>): void {
    try {
      this.journal.append(record);
    } catch {
      // The roots are removed either way; nothing was decided about a trajectory.
    }
  }

  /** Journals how a request ended (written with the next record: it decides nothing). */
  outcome(rid: number, session: string, transfer: Transfer, durationMs: number): void {
    if (transfer.status === 502 || transfer.status === 504) {
      this.metrics.upstreamErrors.inc({ status: String(transfer.status) });
    }
    try {
      this.journal.appendLater({
        type: 'outcome',
        ref: rid,
        session,
        status: transfer.status,
        bytesUp: transfer.bytesUp,
        bytesDown: transfer.bytesDown,
        error: transfer.error,
        durationMs: Math.round(durationMs),
      });
    } catch {
      // The decision itself is on disk; a lost outcome is reported by the next append.
    }
  }

  /** The session's recent events, oldest first (the operators' ring). */
  recent(session: string): readonly Summary[] {
    return this.review.recent(session);
  }

  /** Journals a runner's report of how a call ended; it decides nothing. Throws E_JOURNAL_WRITE. */
  result(record: Unstamped<ResultRecord>): number {
    return this.journal.append(record);
  }

  /**
   * A request refused before it became an event (malformed, no credentials). Its target is
   * bounded (TARGET_BYTES). Without a session it came before any identity, from whoever can
   * reach a listener, so past PER_SECOND a second from one address it is counted into a
   * summary, not written. With one it belongs to an identified agent's (or, without agents, a
   * client address's) trajectory, whose judged requests write uncapped records anyway: kept.
   */
  refusal(
    ask: Pick<Ask, 'source' | 'client'> & { session?: string; method?: string; target?: string },
    status: number,
    reason: string,
  ): Refusal {
    if (
      ask.session !== undefined ||
      this.#refusals.admit(ask.client, { source: ask.source, status, reason })
    ) {
      const bounded = ask.target === undefined ? ask : { ...ask, ...boundedTarget(ask.target) };
      this.#appendRefusal({ type: 'refusal', ...bounded, status, reason });
    }
    return plainRefusal(status, reason);
  }

  /** Writes the summaries of refusals left out (at shutdown, before the journal closes). */
  close(): void {
    this.#refusals.close();
  }

  #appendRefusal(record: Unstamped<RefusalRecord>): void {
    try {
      this.journal.append(record);
    } catch {
      // Refused either way; nothing was decided about a trajectory.
    }
  }

  /** Would this event be sent if it were judged now? Only then is its name resolved. */
  #mayForward({ verdict, deniedBy }: Decision): boolean {
    if (deniedBy !== undefined) return false; // a deny pattern's host is not even looked up
    return verdict === 'ALLOW' || (verdict === 'REVIEW' && this.config.policy.review === 'pass');
  }

  #portAllowed(event: Event, port: number): boolean {
    return (
      this.config.network.ports.includes(port) || this.guard.approvalFor(event)?.namesPort === true
    );
  }

  #normalize(ask: Pick<Ask, 'session' | 'input'> & { source?: Source }, approved = false): Event {
    return normalizeEvent(ask.input, {
      session: ask.session,
      source: ask.source ?? 'proxy',
      ts: Date.now(),
      workspace: this.workspaceFor(ask.session),
      approved,
    });
  }

  /** The event an ask describes, or its refusal when the ask is malformed (journaled). */
  #eventOf(ask: Ask, rid: number | null, once = false): Event | Unforwarded {
    try {
      return this.#normalize(ask, once);
    } catch (err) {
      if (!isTrajgateError(err)) throw err;
      return this.#refuseUnjudged(ask, 400, err.message, rid);
    }
  }

  /** The requests a pause record says it holds: this one, unless a pause refuses at once. */
  #holding(ask: Ask): PauseRecord['held'] {
    if (this.config.policy.pause !== 'hold') return [];
    const since = Date.now();
    return [{ what: ask.what, since, deadline: since + this.config.policy.holdTimeout }];
  }

  /** On resume a held request is judged again, as the request it is. */
  #again(ask: Ask): (rid: number, once: boolean) => Promise<Ruling> {
    return (rid, once) => this.judge(ask, rid, once);
  }

  /** Holds while paused; `again` decides what a resume leads to. */
  async #hold<R>(
    ask: Ask,
    event: Event,
    decision: Decision | null,
    rid: number | null,
    again: (rid: number, once: boolean) => Promise<R>,
  ): Promise<R | Unforwarded> {
    let id = rid;
    if (decision === null) {
      id = this.#record(event, HELD, rid, true, null);
      if (id === null) return this.#failClosed(rid);
    }
    const held = decision ?? HELD;
    if (this.config.policy.pause === 'block')
      return this.#refuse(id as number, held, ask, 'blocked');
    const release = await this.sessions.hold(
      { session: ask.session, what: ask.what, rid: id as number },
      ask.waiting,
    );
    if (release === 'resume' || release === 'once') return again(id as number, release === 'once');
    if (release === 'gone') return { kind: 'gone', rid: id };
    const end: HoldEnd = release === 'deny' ? 'denied' : release;
    return this.#refuse(id as number, held, ask, end);
  }

  #refuse(rid: number, decision: Decision, ask: Ask, end: HoldEnd): Unforwarded {
    const verdict = decision.verdict === 'ALLOW' ? 'REVIEW' : decision.verdict;
    const boundary = decision.boundary ?? this.guard.session(ask.session)?.pausedBy ?? null;
    return {
      kind: 'refuse',
      rid,
      refusal: verdictRefusal(verdict, boundary, ask.what, decision.reason, end),
      decision: { ...decision, verdict, boundary },
    };
  }

  #refuseUnjudged(ask: Ask, status: number, reason: string, rid: number | null): Unforwarded {
    const refusal = this.refusal(
      { source: ask.source, client: ask.client, session: ask.session, target: ask.input.target },
      status,
      reason,
    );
    return { kind: 'refuse', rid, refusal };
  }

  #failClosed(rid: number | null): Unforwarded {
    return {
      kind: 'refuse',
      rid,
      refusal: plainRefusal(
        503,
        'trajgate cannot write its journal, so it refuses every request (fail closed)',
      ),
    };
  }

  /**
   * Writes the event record, for a PAUSE with its pause record (`pausing`: the requests it
   * holds) in one write(2) so that neither is on disk without the other, and only then installs
   * what was decided: the guard's counts and pause, the operators' view. Returns the request id,
   * or null when the journal failed, and then nothing changed.
   */
  #record(
    event: Event,
    decision: Decision,
    rid: number | null,
    held: boolean,
    pausing: PauseRecord['held'] | null,
  ): number | null {
    const record = eventRecord(event, decision, { rid: rid ?? undefined, held: held || undefined });
    // Stamped as the writer will stamp it, so that the pause record can name it; the object
    // then serves the operators' view (the line's fields are written by name).
    const summary = record as { -readonly [K in keyof Summary]: Summary[K] };
    summary.seq = this.journal.lastSeq + 1;
    summary.ts = this.journal.iso(event.ts);
    const pause = pausing && this.review.pauseFor(summary, pausing);
    try {
      // Written before the caller acts on it; a PAUSE (held requests too) is synced at once.
      // Outcomes of earlier requests ride along in the same write(2).
      if (!pause) this.journal.append(record, { ts: event.ts, sync: held });
      else this.journal.appendAll([record, { type: 'pause', ...pause }], event.ts);
    } catch (err) {
      if (isTrajgateError(err)) return null;
      throw err;
    }
    this.guard.commit(event.session, event.ts, decision);
    this.review.observe(summary, event.ts);
    if (pause) this.review.announce(pause);
    this.metrics.event(event.source, event.kind, decision.verdict);
    return rid ?? summary.seq;
  }
}
