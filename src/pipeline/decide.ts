import type { ArmedCredential } from '../config/credential-values.js';
import type { Egress } from '../action/egress.js';
import type { CredentialsInForce } from '../event/credential-set.js';
import type { FlowRegistry } from '../action/flow-registry.js';
import type { HoldEnd, Refusal } from '../action/refusal.js';
import { plainRefusal, verdictRefusal } from '../action/refusal.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import type { Event, Source, ToolMark } from '../event/event.js';
import { normalizeEvent } from '../event/normalize.js';
import { HELD } from '../guard/decision.js';
import type { Decision, Guard } from '../guard/guard.js';
import type { EventRecord, PauseRecord } from '../journal/records.js';
import { eventRecord } from '../journal/records.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Metrics } from '../review/metrics.js';
import type { Review } from '../review/review.js';
import type { Sessions } from '../review/sessions.js';
import type { Deciding } from './flow-basis.js';
import type { Refusals } from './refusals.js';
import type { Ask, Dial, Hold, Refuse, Ruling, RulingBasis, Unforwarded } from './ruling.js';

/** A decision made without the session's lease that would change the session: take it. */
export const CHANGES = Symbol('changes');

export interface DecideParts {
  readonly config: Deciding;
  readonly guard: Guard;
  readonly journal: JournalWriter;
  readonly sessions: Sessions;
  readonly egress: Egress;
  readonly review: Review;
  readonly metrics: Metrics;
  readonly refusals: Refusals;
  readonly flows: FlowRegistry;
  readonly credentials: CredentialsInForce<ArmedCredential>;
  /** Sessions shown a changed tool list (gateway/tool-pin-state.ts): their events carry it. */
  readonly toolMarks?: { markOf(session: string): ToolMark | undefined };
}

/**
 * The decision as one step: normalise → guard → egress check → journal → install. Every
 * decision is journaled before it takes effect; a journal that cannot be written refuses the
 * request (fail closed) and changes nothing.
 */
export class Decider {
  /** Told once a decision set trajectory marks for its session (open flows are judged again). */
  onMarks: ((session: string) => void) | null = null;

  constructor(private readonly p: DecideParts) {}

  /**
   * What `ask` comes to, its event record written: forward, refuse, hold (the session is
   * paused) or gone. `rid`: the request's id when it is judged again after a hold; `once`: an
   * operator approved it this once, so it is judged approved.
   */
  async decide(ask: Ask, rid: number | null, once: boolean, given?: Event): Promise<Ruling | Hold> {
    const ruling = await this.judge(ask, rid, once, false, given);
    if (ruling === CHANGES) throw new TrajgateError('E_INTERNAL', 'a decision asked for a lease');
    return ruling;
  }

  /** Whether the decision would change nothing in the session as this gateway saw it last. */
  likelyReadOnly(event: Event): boolean {
    return this.#paused(event.session) || !changes(this.p.guard.inspect(event));
  }

  /** A request the shared store could not decide: refused, and the refusal journaled here. */
  storeFailed(ask: Ask, rid: number | null, err: unknown): Refuse | Unforwarded {
    if (!isTrajgateError(err)) throw err;
    const { source, client, session } = ask;
    const who = { source, client, session, target: ask.input.target };
    return { kind: 'refuse', rid, refusal: this.p.refusals.refuse(who, 503, err.message) };
  }

  /**
   * The decision itself. `readOnly`: the session's state was read without its lease
   * (pipeline/shared.ts), so a decision that would change it is not made (CHANGES, before
   * anything is journaled). `given`: the ask's event, already normalised.
   */
  async judge(
    ask: Ask,
    rid: number | null,
    once: boolean,
    readOnly: boolean,
    given?: Event,
  ): Promise<Ruling | Hold | typeof CHANGES> {
    let event = given ?? this.event(ask, rid, once);
    if (!('subject' in event)) return event;
    // Approved once, it goes though its session stays paused: the operator named it.
    if (!once && this.#paused(ask.session)) return this.held(ask, event, rid);
    const { subject } = event;
    if (ask.connect && subject.type === 'network' && !this.#portAllowed(event, subject.port)) {
      event = { ...event, denied: `port ${subject.port} not allowed` };
    }
    let decision = this.p.guard.inspect(event);
    if (subject.type !== 'network' || event.denied !== undefined || !this.#mayForward(decision)) {
      return this.#settle(ask, event, decision, rid, null, readOnly);
    }
    // Only a request that would be sent has its host looked up: a lookup already leaks the name.
    const pending = this.p.egress.check(subject.host, subject.port);
    const check = pending instanceof Promise ? await pending : pending;
    if (ask.waiting.gone) return { kind: 'gone', rid };
    if (!once && this.#paused(ask.session)) return this.held(ask, event, rid);
    if (!check.ok && check.denied) {
      event = { ...event, denied: check.reason };
      return this.#settle(ask, event, this.p.guard.inspect(event), rid, null, readOnly);
    }
    // Taken again at the moment of effect: during the lookup other requests moved the counts,
    // or an operator revoked, blocked or reloaded (replay sees only what is journaled).
    if (pending instanceof Promise) {
      decision = this.p.guard.inspect(event);
      if (!this.#mayForward(decision))
        return this.#settle(ask, event, decision, rid, null, readOnly);
    }
    const route = check.ok
      ? { address: check.address, port: subject.port }
      : plainRefusal(502, check.reason);
    return this.#settle(ask, event, decision, rid, route, readOnly);
  }

  /** The event an ask describes, or its refusal when the ask is malformed (journaled). */
  event(ask: Ask, rid: number | null, once = false): Event | Unforwarded {
    try {
      return this.normalize(ask, once);
    } catch (err) {
      if (!isTrajgateError(err)) throw err;
      const { source, client, session } = ask;
      const who = { source, client, session, target: ask.input.target };
      return { kind: 'refuse', rid, refusal: this.p.refusals.refuse(who, 400, err.message) };
    }
  }

  normalize(ask: Pick<Ask, 'session' | 'input'> & { source?: Source }, approved = false): Event {
    const { policy } = this.p.guard;
    // Every source's event is made here: one shown a changed tool list pauses, whatever it is.
    const toolChange = this.p.toolMarks?.markOf(ask.session);
    const input = toolChange === undefined ? ask.input : { ...ask.input, toolChange };
    const event = normalizeEvent(input, {
      session: ask.session,
      source: ask.source ?? 'proxy',
      ts: Date.now(),
      workspace: policy.workspaceFor(ask.session),
      approved,
    });
    // A file with hard links may be one of trajgate's under another name: compare it with
    // trajgate's files as they are now (a rotation made a new journal file since).
    if (event.subject.type === 'path' && event.subject.inodes !== undefined)
      policy.protected.refresh();
    return event;
  }

  /** A request of a paused session: journaled as held (it decides nothing), then held. */
  held(ask: Ask, event: Event, rid: number | null): Hold | Unforwarded {
    const id = this.#record(event, HELD, rid, true, null);
    if (id === null) return failClosed(rid);
    return this.#holdOrBlock(ask, id, HELD, event);
  }

  /** The refusal of a REVIEW or PAUSE, for a request refused at once or let go unsent. */
  refuse(rid: number, decision: Decision, ask: Ask, end: HoldEnd): Refuse {
    const verdict = decision.verdict === 'ALLOW' ? 'REVIEW' : decision.verdict;
    const boundary = decision.boundary ?? this.p.guard.session(ask.session)?.pausedBy ?? null;
    return {
      kind: 'refuse',
      rid,
      refusal: verdictRefusal(verdict, boundary, ask.what, decision.reason, end),
      decision: { ...decision, verdict, boundary },
    };
  }

  /** Journals a decision and turns it into what happens: `route` is where it would go. */
  #settle(
    ask: Ask,
    event: Event,
    decision: Decision,
    rid: number | null,
    route: Dial | Refusal | null,
    readOnly: boolean,
  ): Ruling | Hold | typeof CHANGES {
    if (readOnly && changes(decision)) return CHANGES;
    const { verdict } = decision;
    const pausing =
      verdict !== 'PAUSE'
        ? null
        : event.exfiltration !== undefined
          ? []
          : this.#holding(ask.what, rid, ask.bytes ?? null);
    const id = this.#record(event, decision, rid, false, pausing);
    if (id === null) return failClosed(rid);
    if (verdict === 'PAUSE') {
      // Journaled and installed: now open tunnels freeze.
      this.p.sessions.paused(ask.session);
      return this.#holdOrBlock(ask, id, decision, event);
    }
    if (
      verdict === 'REVIEW' &&
      (this.p.config.policy.review === 'block' ||
        event.denied !== undefined ||
        decision.deniedBy !== undefined)
    ) {
      return this.refuse(id, decision, ask, 'blocked');
    }
    if (route !== null && 'status' in route) return { kind: 'refuse', rid: id, refusal: route };
    return {
      kind: 'forward',
      rid: id,
      event,
      decision,
      dial: route,
      basis: this.#basis(event, decision),
    };
  }

  /** What a forward rests on: its agent, the approval behind it, the rules' generation. */
  #basis(event: Event, decision: Decision): RulingBasis {
    const approval = this.p.guard.approvalBehind(decision, event);
    return {
      session: event.session,
      approval:
        approval === undefined
          ? null
          : { id: approval.id, pattern: approval.pattern, expiresAt: approval.expiresAt },
      generation: this.p.flows.generation,
    };
  }

  /**
   * A request carrying a sentinel out of place is refused at once, never held: no resume could
   * send it (the guard pauses on it again), and its channel may already be closed.
   */
  #holdOrBlock(ask: Ask, rid: number, decision: Decision, event: Event): Hold | Refuse {
    if (event.exfiltration !== undefined) return this.refuse(rid, decision, ask, 'never');
    if (this.p.config.policy.pause === 'block') return this.refuse(rid, decision, ask, 'blocked');
    return { kind: 'hold', rid, decision };
  }

  #paused(session: string): boolean {
    return this.p.guard.session(session)?.pausedAt != null;
  }

  /** Would this event be sent if it were judged now? Only then is its name resolved. */
  #mayForward({ verdict, deniedBy }: Decision): boolean {
    if (deniedBy !== undefined) return false; // a deny pattern's host is not even looked up
    return verdict === 'ALLOW' || (verdict === 'REVIEW' && this.p.config.policy.review === 'pass');
  }

  #portAllowed(event: Event, port: number): boolean {
    return (
      this.p.config.network.ports.includes(port) ||
      this.p.guard.approvalFor(event)?.namesPort === true
    );
  }

  /**
   * The requests a pause record says it holds: this one (`rid`: its id, or the seq its event
   * record is about to take; `bytes`: its body's announced size), unless a pause refuses at once.
   */
  #holding(what: string, rid: number | null, bytes: number | null): PauseRecord['held'] {
    if (this.p.config.policy.pause !== 'hold') return [];
    const since = Date.now();
    const deadline = since + this.p.config.policy.holdTimeout;
    const id = rid ?? this.p.journal.lastSeq + 1;
    return [{ rid: id, what, bytes, since, deadline }];
  }

  /**
   * A live flow's event judged again as if sent now (its session set a trajectory mark, or sent
   * past a volume limit, since it was admitted). Only a rule that fires for it changes anything:
   * journaled as an event of its request (`rid`); a PAUSE pauses the session, so its flows
   * freeze. Returns why the flow may not go on (a refusing REVIEW, a journal that failed), or
   * null.
   */
  rejudge(event: Event, rid: number | null, what: string): string | null {
    const now = { ...event, ts: Date.now() };
    const decision = this.p.guard.inspect(now);
    if (decision.rule === undefined || decision.verdict === 'ALLOW') return null;
    const pause = decision.verdict === 'PAUSE';
    const sent = rid === null ? undefined : this.p.guard.session(event.session)?.sent.get(rid);
    const holding = pause ? this.#holding(what, rid, null) : null;
    const id = this.#record(now, decision, rid, false, holding, sent?.bytes);
    if (id === null) return failClosed(rid).refusal.reason.why;
    if (pause) {
      this.p.sessions.paused(event.session);
      return this.p.config.policy.pause === 'block' ? decision.reason : null;
    }
    return this.p.config.policy.review === 'block' ? decision.reason : null;
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
    sentUp?: number,
  ): number | null {
    const { journal } = this.p;
    const request = { rid: rid ?? undefined, held: held || undefined, sentUp };
    const record = eventRecord(event, decision, request);
    // Stamped as the writer will stamp it, so that the pause record can name it.
    const stamped: EventRecord = { seq: journal.lastSeq + 1, ts: journal.iso(event.ts), ...record };
    const pause = pausing && this.p.review.pauseFor(stamped, pausing);
    try {
      // Written before the caller acts on it; a PAUSE (held requests too) is synced at once.
      // Outcomes of earlier requests ride along in the same write(2).
      if (!pause) journal.append(record, { ts: event.ts, sync: held });
      else journal.appendAll([record, { type: 'pause', ...pause }], event.ts);
    } catch (err) {
      if (isTrajgateError(err)) return null;
      throw err;
    }
    // As the journal has it, so that a restart rebuilds the same state (marks name the target).
    const { kind, target } = record;
    const ref = { seq: stamped.seq, rid: rid ?? undefined, kind, target };
    this.p.guard.commit(event.session, event.ts, decision, ref);
    this.p.review.observe(stamped, event.ts);
    if (pause) this.p.review.announce(pause);
    this.p.metrics.event(event.source, event.kind, decision.verdict);
    if (decision.marks !== undefined) this.onMarks?.(event.session);
    return rid ?? stamped.seq;
  }
}

/** What a decision asks the guard to install (Guard.commit): counts, a pause, an event number. */
function changes(d: Decision): boolean {
  return (
    d.counted !== null ||
    d.verdict === 'PAUSE' ||
    d.eventNo !== undefined ||
    d.budgeted !== undefined
  );
}

function failClosed(rid: number | null): Refuse {
  return {
    kind: 'refuse',
    rid,
    refusal: plainRefusal(
      503,
      'trajgate cannot write its journal, so it refuses every request (fail closed)',
    ),
  };
}
