import { TrajgateError } from '../errors.js';
import type { Approval, ApprovalSpec } from '../guard/approvals.js';
import { compileApproval } from '../guard/approvals.js';
import type { Guard } from '../guard/guard.js';
import type { Held, HeldRequests } from '../action/hold.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from './review.js';
import { ruleId, Rules } from './rules.js';

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
   * held request is then judged again, or with `once` forwarded as approved this once (its
   * event journaled approved, so a replay counts nothing for it either); later requests are
   * judged as usual.
   */
  resume(
    id: string,
    options: { reset?: boolean; once?: boolean; keepMarks?: boolean; by?: string } = {},
  ): number {
    // An active session's counts may still be reset: a fresh start once its work is reviewed.
    const reset = options.reset === true;
    if (!reset) this.#mustBePaused(id, 'resume');
    const once = options.once === true ? { once: true as const } : {};
    const keep = options.keepMarks === true ? { keepMarks: true as const } : {};
    this.#journal.append(
      { type: 'resume', session: id, reset, ...once, ...keep, by: options.by ?? 'operator' },
      { sync: true },
    );
    this.#guard.resume(id, reset, options.keepMarks === true);
    return this.resumedElsewhere(id, options.once === true);
  }

  /**
   * A resume journaled (here, or by another gateway sharing the state): the session's held
   * requests here are judged again (or forwarded, `once`).
   */
  resumedElsewhere(id: string, once: boolean): number {
    this.#review.resumed(id);
    this.#review.answered(id);
    this.#watcher?.resumed(id);
    return this.#held.release(id, once ? 'once' : 'resume');
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
    return this.#held.release(id, 'deny');
  }

  /** Sessions with requests held here. */
  holding(): string[] {
    return this.#held.sessions();
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
