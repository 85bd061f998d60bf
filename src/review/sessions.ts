import { TrajgateError } from '../errors.js';
import { BUDGET, TOOL_CHANGED } from '../event/own-boundaries.js';
import type { Approval, ApprovalSpec } from '../guard/approvals.js';
import { compileApproval } from '../guard/approvals.js';
import type { Guard } from '../guard/guard.js';
import type { Held, HeldRequests, Release } from '../action/hold.js';
import type { ResumeRecord } from '../journal/records.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from './review.js';
import { ruleId, Rules } from './rules.js';

/** A held request as a resume reports it. */
export interface HeldBrief {
  readonly rid: number;
  readonly what: string;
  readonly bytes: number | null;
}

export interface ResumeOptions {
  readonly reset?: boolean;
  /** Approve once: the rids of the held requests forwarded as approved. */
  readonly once?: readonly number[];
  readonly onceAt?: string | null;
  readonly keepMarks?: boolean;
  readonly by?: string;
}

/**
 * What a resume or an approve-once let go: `once`, forwarded as approved this once; `judged`,
 * judged again (a resume); `held`, what an approve-once left held, its session still paused.
 */
export interface Resumed {
  readonly released: number;
  readonly once: readonly HeldBrief[];
  readonly judged: readonly HeldBrief[];
  readonly held: readonly HeldBrief[];
}

const brief = ({ rid, what, bytes }: Held): HeldBrief => ({ rid, what, bytes });

/** `POST http://h/x (12 bytes)`: a held request as operators are shown it. */
export function describeHeld(h: Pick<HeldBrief, 'what' | 'bytes'>): string {
  return h.bytes === null ? h.what : `${h.what} (${h.bytes} byte${h.bytes === 1 ? '' : 's'})`;
}

/** A resume's report: every request let go judged again, or (older `once: true`) approved. */
function resumed(held: readonly Held[], approved: boolean): Resumed {
  const all = held.map(brief);
  return {
    released: held.length,
    once: approved ? all : [],
    judged: approved ? [] : all,
    held: [],
  };
}

/** Follows sessions' state changes (live flows do: see action/flow-registry). */
export interface SessionWatcher {
  paused(session: string): void;
  resumed(session: string): void;
  denied(session: string): void;
  /** Closes the flows whose basis a change (`cause`) took away: a revoke, a new deny pattern. */
  rejudge?(cause: string): number;
}

/**
 * The operators' desk: resume, deny and approve, each journaled (and synced) before it takes
 * effect. The guard owns the paused state (so it is rebuilt from the journal); the held
 * requests wait in action/hold, which this desk lets go.
 */
export class Sessions {
  readonly #guard: Guard;
  readonly #journal: JournalWriter;
  readonly #held: HeldRequests;
  readonly #review: Review;
  readonly #watcher: SessionWatcher | null;
  /** Set when several gateways share the state: ids they make must differ. */
  readonly #replica: string | null;
  /** Deny patterns and revokes (operator actions on rules rather than on a session). */
  readonly rules: Rules;

  constructor(
    guard: Guard,
    journal: JournalWriter,
    held: HeldRequests,
    review: Review,
    watcher: SessionWatcher | null = null,
    replica: string | null = null,
  ) {
    this.#guard = guard;
    this.#journal = journal;
    this.#held = held;
    this.#review = review;
    this.#watcher = watcher;
    this.#replica = replica;
    const rejudge = watcher?.rejudge?.bind(watcher);
    this.rules = new Rules(guard, journal, review, rejudge ?? null, replica);
  }

  /** A decision paused the session (its pause record is on disk). */
  paused(session: string): void {
    this.#watcher?.paused(session);
  }

  isPaused(session: string): boolean {
    const state = this.#guard.session(session);
    return state !== undefined && state.pausedAt !== null;
  }

  /** Requests held across all sessions. */
  heldCount(): number {
    return this.#held.count();
  }

  held(session: string): Held[] {
    return this.#held.of(session);
  }

  /** Waits (at most `ms`) until the held requests `rids`, just released, are judged again. */
  afterJudged(rids: readonly number[], ms: number): Promise<void> {
    return this.#held.afterJudged(rids, ms);
  }

  /** How the hold of request `rid` ended here, if it did lately. */
  ended(rid: number): Release | undefined {
    return this.#held.ended(rid);
  }

  /**
   * Adds an approval for one session (or every session when `session` is null), journaled
   * before it applies. Throws E_PATTERN_INVALID for a pattern that does not parse.
   */
  approve(spec: ApprovalSpec & { by?: string }): Approval {
    const kind = spec.kind ?? 'network';
    compileApproval({ ...spec, kind });
    const expiresAt = spec.expiresAt ?? null;
    const by = spec.by ?? 'operator';
    const { id, field } = ruleId('a', this.#journal.lastSeq + 1, this.#replica);
    this.#journal.append(
      {
        type: 'approve',
        ...field,
        session: spec.session ?? null,
        pattern: spec.pattern,
        kind,
        expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
        by,
      },
      { sync: true },
    );
    if (spec.session != null) this.#review.answered(spec.session);
    return this.#guard.approve({ ...spec, kind, id, by, origin: 'operator' });
  }

  /**
   * Unpauses (counts kept unless `reset`, trajectory marks cleared unless `keepMarks`); each
   * held request is then judged again; later requests are judged as usual. With `once` it is an
   * approve-once instead: the held requests it names by rid are forwarded as approved this once
   * (their events journaled approved, so a replay counts nothing for them either), every other
   * stays held and the session stays paused — a decision covers what it names. `onceAt`: the
   * gateway whose rids they are (a decision link made by another replica); a rid no longer held
   * lets nothing extra go.
   */
  resume(id: string, options: ResumeOptions = {}): number {
    return this.resumeReport(id, options).released;
  }

  /** `resume`, answering which held requests went as approved and which are judged again. */
  resumeReport(id: string, options: ResumeOptions = {}): Resumed {
    // An active session's counts may still be reset: a fresh start once its work is reviewed.
    const reset = options.reset === true && options.once === undefined;
    if (!reset) this.#mustBePaused(id, options.once === undefined ? 'resume' : 'approve once');
    if (options.once !== undefined) this.#mayApproveOnce(id);
    const onceAt = options.onceAt ?? this.#replica;
    const once =
      options.once === undefined
        ? {}
        : { once: [...options.once], ...(onceAt === null ? {} : { onceAt }) };
    const keep = options.keepMarks === true ? { keepMarks: true as const } : {};
    const record = {
      type: 'resume' as const,
      session: id,
      reset,
      ...once,
      ...keep,
      by: options.by ?? 'operator',
    };
    this.#journal.append(record, { sync: true });
    if (options.once === undefined) this.#guard.resume(id, reset, options.keepMarks === true);
    return this.resumedElsewhere(record);
  }

  /**
   * A resume journaled (here, or by another gateway sharing the state): the session's held
   * requests here are judged again (all approved, for an older journal's `once: true`). An
   * approve-once (`once` names rids) lets only those go, when they are this gateway's; the rest
   * stay held, the session paused.
   */
  resumedElsewhere(record: Pick<ResumeRecord, 'session' | 'once' | 'onceAt'>): Resumed {
    const id = record.session;
    this.#review.answered(id);
    if (Array.isArray(record.once)) {
      const mine = (record.onceAt ?? null) === this.#replica;
      const named = mine ? this.#held.releaseOnce(id, new Set(record.once)) : [];
      const held = this.#held.of(id).map(brief);
      return { released: named.length, once: named.map(brief), judged: [], held };
    }
    this.#review.resumed(id);
    this.#watcher?.resumed(id);
    return resumed(
      this.#held.release(id, record.once === true ? 'once' : 'resume'),
      record.once === true,
    );
  }

  /**
   * Raises the session's budget `budget` by `amount` in its current window, journaled before it
   * applies; a session a budget paused is then resumed, its marks kept (a top-up reviews no
   * warning), its held requests judged again: one still past a budget pauses it again. Throws
   * E_UNKNOWN_BUDGET.
   */
  topUp(id: string, budget: string, amount: number, by: string): Resumed | null {
    this.#guard.budget(budget);
    this.#journal.append({ type: 'topup', session: id, budget, amount, by }, { sync: true });
    this.#guard.topUp(id, budget, amount, Date.now());
    this.#review.answered(id);
    if (this.#guard.session(id)?.pausedBy !== BUDGET) return null;
    return this.resumeReport(id, { keepMarks: true, by });
  }

  /** Answers every held request 403; the session stays paused. */
  deny(id: string, options: { by?: string } = {}): number {
    this.#mustBePaused(id, 'deny');
    const released = this.held(id).length;
    this.#journal.append(
      { type: 'deny', session: id, by: options.by ?? 'operator', released },
      { sync: true },
    );
    return this.deniedElsewhere(id);
  }

  /** A deny journaled (here or by another gateway): the session's held requests here get 403. */
  deniedElsewhere(id: string): number {
    this.#review.answered(id);
    this.#watcher?.denied(id);
    return this.#held.release(id, 'deny').length;
  }

  /** This gateway's name among those sharing the state (null: it is alone). */
  get replica(): string | null {
    return this.#replica;
  }

  /** Sessions with requests held here. */
  holding(): string[] {
    return this.#held.sessions();
  }

  /**
   * A session paused on a changed tool list acts on text no one approved yet: what goes on is
   * the list pinned (or the session resumed), never one request of it.
   */
  #mayApproveOnce(id: string): void {
    const server = this.#review.pauseRecord(id)?.trigger.toolChange?.server;
    if (this.#guard.session(id)?.pausedBy !== TOOL_CHANGED || server === undefined) return;
    throw new TrajgateError(
      'E_TOOL_CHANGED',
      `session ${JSON.stringify(id)} paused on a changed tool list of ${JSON.stringify(server)}: approve once cannot let it go; pin the list (\`trajgate tools approve ${server}\`) or resume the session`,
    );
  }

  #mustBePaused(id: string, action: string): void {
    if (!this.isPaused(id)) {
      throw new TrajgateError(
        'E_NOT_PAUSED',
        `cannot ${action} session ${JSON.stringify(id)}: it is not paused${action === 'resume' ? ' (reset: true, `resume --reset`, resets the counts of an active session)' : ''}`,
      );
    }
  }
}
