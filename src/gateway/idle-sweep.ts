import type { Logger } from 'pino';
import type { FlowRegistry } from '../action/flow-registry.js';
import type { HeldRequests } from '../action/hold.js';
import type { Guard } from '../guard/guard.js';
import { keptBecause } from '../guard/idle.js';
import type { HookCalls } from '../ingress/hook-calls.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from '../review/review.js';

/** Sessions looked at per sweep: a few milliseconds of the event loop at most. */
export const PER_SWEEP = 5_000;
/** The longest wait between sweeps; a short `policy.sessionIdle` sweeps more often. */
const LONGEST_MS = 60_000;
const SHORTEST_MS = 250;

export interface SweepParts {
  readonly guard: Guard;
  readonly review: Review;
  readonly held: HeldRequests;
  readonly flows: FlowRegistry;
  readonly calls: HookCalls;
  readonly journal: Pick<JournalWriter, 'append'>;
  readonly log: Logger;
  /** Counts each eviction (trajgate_sessions_evicted_total). */
  readonly evicted: () => void;
  readonly now?: () => number;
}

/**
 * Forgets sessions with nothing left to remember (guard/idle.ts says which) once they have been
 * idle for `policy.sessionIdle`: each is journaled (`evict`) first, then the guard, review,
 * hook calls and held-request epochs forget it (the session index and pause ends forget it as
 * the record is appended). A journal that cannot take the record keeps the session. Each sweep
 * looks at PER_SWEEP sessions from where the last one stopped, so a full pass over N sessions
 * takes N / PER_SWEEP sweeps (100,000 sessions: 20 sweeps, 20 minutes at the longest interval).
 * The journal's evict records, not this rule, are what a restart or a replay applies.
 */
export class IdleSweep {
  readonly #p: SweepParts;
  #idleMs: number;
  #cursor: Iterator<string> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(parts: SweepParts, idleMs: number) {
    this.#p = parts;
    this.#idleMs = idleMs;
  }

  /** A reload's `policy.sessionIdle`: the sweeps, if running, go on at its interval. */
  configure(idleMs: number): void {
    this.#idleMs = idleMs;
    if (this.#timer !== null) this.start();
  }

  /** Starts sweeping at the interval `policy.sessionIdle` calls for. */
  start(): void {
    const idleMs = this.#idleMs;
    this.close();
    const every = Math.min(LONGEST_MS, Math.max(SHORTEST_MS, Math.floor(idleMs / 4)));
    this.#timer = setInterval(() => this.sweep(), every);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One sweep: the sessions evicted. */
  sweep(now = (this.#p.now ?? Date.now)()): number {
    const { guard, review, held, flows } = this.#p;
    const approved = new Set(guard.approvals.all(now).map((a) => a.session));
    const denied = new Set(guard.denies.all(null, true).map((d) => d.session));
    const rules = guard.policy.sequences;
    this.#cursor ??= review.sessions();
    let evicted = 0;
    for (let n = 0; n < PER_SWEEP; n++) {
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = null;
        break;
      }
      const session = next.value;
      const facts = {
        state: guard.session(session),
        flagged: review.flags(session).flagged,
        ownRules: approved.has(session) || denied.has(session),
        held: held.holds(session),
        flows: flows.has(session),
        judging: flows.isJudging(session),
        lastActivity: review.activity(session)?.lastActivity ?? now,
      };
      if (keptBecause(facts, rules, now, this.#idleMs, guard.policy.budgets) !== null) continue;
      if (!this.#evict(session, facts.lastActivity)) {
        // The journal failed: the next sweep starts over, this session included.
        this.#cursor = null;
        break;
      }
      evicted++;
    }
    return evicted;
  }

  #evict(session: string, lastActivity: number): boolean {
    const { guard, review, held, calls, journal, log } = this.#p;
    try {
      journal.append({
        type: 'evict',
        session,
        idleSince: new Date(lastActivity).toISOString(),
        reason: `idle for policy.sessionIdle (${this.#idleMs} ms) with nothing left to remember`,
      });
    } catch (err) {
      log.warn({ err, session }, 'an idle session was kept: its evict record was not written');
      return false;
    }
    guard.forget(session);
    review.forget(session);
    calls.forget(session);
    held.forget(session);
    this.#p.evicted();
    return true;
  }
}
