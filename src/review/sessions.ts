import { TrajgateError } from '../errors.js';
import type { Approval, ApprovalSpec } from '../guard/approvals.js';
import { compileApproval } from '../guard/approvals.js';
import type { Guard } from '../guard/guard.js';
import type { Admission } from '../action/live-tunnels.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from './review.js';
import { Rules } from './rules.js';

/** Whether the client of a request still waits. */
export interface Presence {
  readonly gone: boolean;
  /** Calls `fn` once when the client goes away; returns a function that cancels that. */
  onGone(fn: () => void): () => void;
}

/** How a held request was let go (`once`: resumed, and forwarded as approved this once). */
export type Release = 'resume' | 'once' | 'deny' | 'timeout' | 'gone' | 'shutdown';

/** A request held open because its session is paused. */
export interface Held {
  readonly id: number;
  readonly session: string;
  /** `GET http://host/path` or `CONNECT host:443`: what the agent asked for. */
  readonly what: string;
  /** The request's id: the seq of its first event record. */
  readonly rid: number;
  readonly since: number;
  readonly deadline: number;
}

interface Entry extends Held {
  settle(release: Release): void;
}

/** Follows sessions' state changes (open tunnels do: see action/live-tunnels). */
export interface SessionWatcher {
  paused(session: string): void;
  resumed(session: string): void;
  denied(session: string): void;
  /** Closes the tunnels `why` gives a reason for (a revoke, a new deny pattern). */
  closeWhere?(why: (admission: Admission) => string | null): number;
}

/** A session as operators drive it: its state, what it holds, and resume / deny. */
export interface Session {
  readonly id: string;
  readonly paused: boolean;
  readonly held: readonly Held[];
  approve(
    pattern: string,
    options?: { kind?: string; expiresAt?: number | null; by?: string },
  ): Approval;
  resume(options?: { reset?: boolean; once?: boolean; by?: string }): number;
  deny(options?: { by?: string }): number;
}

/**
 * Paused sessions and the requests they hold. The guard owns the paused state (so it is
 * rebuilt from the journal); this desk owns the waiting requests and the operator actions,
 * each journaled (and synced) before it takes effect.
 */
export class Sessions {
  readonly #guard: Guard;
  readonly #journal: JournalWriter;
  #holdTimeoutMs: number;
  readonly #review: Review;
  readonly #watcher: SessionWatcher | null;
  readonly #held = new Map<string, Set<Entry>>();
  #nextId = 1;
  /** Deny patterns and revokes (operator actions on rules rather than on a session). */
  readonly rules: Rules;

  constructor(
    guard: Guard,
    journal: JournalWriter,
    holdTimeoutMs: number,
    review: Review,
    watcher: SessionWatcher | null = null,
  ) {
    this.#guard = guard;
    this.#journal = journal;
    this.#holdTimeoutMs = holdTimeoutMs;
    this.#review = review;
    this.#watcher = watcher;
    const closer = watcher?.closeWhere?.bind(watcher);
    this.rules = new Rules(guard, journal, review, closer ?? null);
  }

  /** A config reload's `policy.holdTimeout`, for requests held from now on. */
  setHoldTimeout(ms: number): void {
    this.#holdTimeoutMs = ms;
  }

  /** A decision paused the session (its pause record is on disk). */
  paused(session: string): void {
    this.#watcher?.paused(session);
  }

  isPaused(session: string): boolean {
    const state = this.#guard.session(session);
    return state !== undefined && state.pausedAt !== null;
  }

  /** Waits until an operator resumes or denies the session, the hold times out, or the client leaves. */
  hold(info: { session: string; what: string; rid: number }, client: Presence): Promise<Release> {
    return new Promise((resolve) => {
      const since = Date.now();
      const set = this.#held.get(info.session) ?? new Set<Entry>();
      this.#held.set(info.session, set);
      const entry: Entry = {
        ...info,
        id: this.#nextId++,
        since,
        deadline: since + this.#holdTimeoutMs,
        settle: (release) => {
          if (!set.delete(entry)) return;
          clearTimeout(timer);
          cancel();
          if (set.size === 0 && this.#held.get(info.session) === set)
            this.#held.delete(info.session);
          resolve(release);
        },
      };
      const timer = setTimeout(() => entry.settle('timeout'), this.#holdTimeoutMs);
      set.add(entry);
      const cancel = client.onGone(() => entry.settle('gone'));
    });
  }

  /** Requests held across all sessions. */
  heldCount(): number {
    let n = 0;
    for (const set of this.#held.values()) n += set.size;
    return n;
  }

  held(session: string): Held[] {
    return [...(this.#held.get(session) ?? [])];
  }

  get(id: string): Session {
    const self = this;
    return {
      id,
      get paused() {
        return self.isPaused(id);
      },
      get held() {
        return self.held(id);
      },
      approve: (pattern, options = {}) => this.approve({ ...options, pattern, session: id }),
      resume: (options = {}) => this.resume(id, options),
      deny: (options = {}) => this.deny(id, options),
    };
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
    const seq = this.#journal.append(
      {
        type: 'approve',
        session: spec.session ?? null,
        pattern: spec.pattern,
        kind,
        expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
        by,
      },
      { sync: true },
    );
    if (spec.session != null) this.#review.answered(spec.session);
    return this.#guard.approve({ ...spec, kind, id: `a${seq}`, by, origin: 'operator' });
  }

  /**
   * Unpauses (counts kept unless `reset`); each held request is then judged again, or with
   * `once` forwarded as approved this once (its event journaled approved, so a replay counts
   * nothing for it either); later requests are judged as usual.
   */
  resume(id: string, options: { reset?: boolean; once?: boolean; by?: string } = {}): number {
    // An active session's counts may still be reset: a fresh start once its work is reviewed.
    const reset = options.reset === true;
    if (!reset) this.#mustBePaused(id, 'resume');
    const once = options.once === true ? { once: true as const } : {};
    this.#journal.append(
      { type: 'resume', session: id, reset, ...once, by: options.by ?? 'operator' },
      { sync: true },
    );
    this.#guard.resume(id, reset);
    this.#review.resumed(id);
    this.#review.answered(id);
    this.#watcher?.resumed(id);
    return this.#release(id, options.once === true ? 'once' : 'resume');
  }

  /** Answers every held request 403; the session stays paused. */
  deny(id: string, options: { by?: string } = {}): number {
    this.#mustBePaused(id, 'deny');
    const released = this.held(id).length;
    this.#journal.append(
      { type: 'deny', session: id, by: options.by ?? 'operator', released },
      { sync: true },
    );
    this.#review.answered(id);
    this.#watcher?.denied(id);
    return this.#release(id, 'deny');
  }

  /** Lets every held request go (the gateway is stopping). */
  shutdown(): void {
    for (const id of [...this.#held.keys()]) this.#release(id, 'shutdown');
  }

  #release(id: string, release: Release): number {
    const entries = [...(this.#held.get(id) ?? [])];
    for (const entry of entries) entry.settle(release);
    return entries.length;
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
