import { ApprovalSet } from './approvals.js';
import { DenySet } from './denies.js';
import type { BudgetStep } from './decision.js';
import type { Pending, PendingEvents } from './pending.js';
import { NO_PENDING, PendingRing } from './pending.js';

export type { Pending, PendingEvents } from './pending.js';

/** The newest event that matched a trajectory rule's `after`: `what` is `kind target`. */
export interface Mark {
  readonly rule: string;
  readonly seq: number;
  readonly eventNo: number;
  readonly ts: number;
  readonly what: string;
}

/** Bytes a request sent up, and when its outcome said so. */
export interface Sent {
  readonly ts: number;
  readonly bytes: number;
}

/** A budget's window: when it opened (ms), what it used, what operators topped up in it. */
export interface BudgetUse {
  readonly start: number;
  readonly used: number;
  readonly extra: number;
  /** A `hosts` budget's hosts seen in the window; null for other measures. */
  readonly hosts: ReadonlySet<string> | null;
}

/** What the guard remembers of one session. */
export interface SessionState {
  readonly counts: ReadonlyMap<string, number>;
  /** When the session paused (ms), or null while it runs. */
  readonly pausedAt: number | null;
  /** The boundary whose crossing paused it. */
  readonly pausedBy: string | null;
  /** Judged events so far (only kept while trajectory rules are configured). */
  readonly events: number;
  /** Per rule name, its live mark. */
  readonly marks: ReadonlyMap<string, Mark>;
  /** Events waiting for their outcome: the newest PENDING_MAX. */
  readonly pending: PendingEvents;
  /** By request id, in the order outcomes came; `sentBytes` is their sum. */
  readonly sent: ReadonlyMap<number, Sent>;
  readonly sentBytes: number;
  /** Per budget name, its current window. */
  readonly budgets: ReadonlyMap<string, BudgetUse>;
}

/** A session the store does not know yet. */
export const EMPTY: SessionState = fresh();

/**
 * What one committed decision (or outcome) changes in its session. Every value is absolute, so
 * that installing one change twice is harmless.
 */
export interface SessionChange {
  /** Counters' new values. */
  readonly counted: Readonly<Record<string, number>> | null;
  /** Pauses the session at `at` by boundary `by`, unless it is paused already. */
  readonly pause: { readonly at: number; readonly by: string | null } | null;
  /** The judged-event count. */
  readonly events?: number | undefined;
  /** Each replaces its rule's mark. */
  readonly marks?: readonly Mark[] | undefined;
  /** Waits for its outcome (replacing the newest if of its request id); beyond PENDING_MAX the oldest go. */
  readonly pending?: Pending | undefined;
  /** Its outcome came: the pending events of this request id go. */
  readonly settled?: number | undefined;
  /** A request's bytes sent up; entries from before `since` go. */
  readonly sent?: (Sent & { readonly rid: number; readonly since: number }) | undefined;
  /** Budgets' new use (a `start` of its own opens a new window). */
  readonly budgeted?: Readonly<Record<string, BudgetStep>> | undefined;
}

/**
 * Everything the trajectory remembers, apart from the rules that read it: per session the
 * guard's counts and pause and the newest event records (`R`: review's record type, which the
 * guard does not know), and the approvals and deny patterns. Each write is one whole step (a
 * commit, a resume, one record), so a store shared by several gateways can make each step
 * atomic per session; what the guard decides stays in the guard.
 */
export interface TrajectoryStore<R> {
  /** Config and operators' approvals. */
  readonly approvals: ApprovalSet;
  /** Config and operators' deny patterns. */
  readonly denies: DenySet;
  session(id: string): SessionState | undefined;
  /** The sessions with a count or a pause (or a resume), in the order they first had one. */
  sessions(): IterableIterator<[string, SessionState]>;
  commit(id: string, change: SessionChange): void;
  /**
   * Unpauses; counts (and budgets' use) are cleared only with `reset`; marks, pending events and bytes sent unless
   * `keepMarks`.
   */
  resume(id: string, reset: boolean, keepMarks?: boolean): void;
  /** The session's newest records, oldest first. */
  recent(id: string): readonly R[];
  /** Forgets the session (an evict record): if it comes back it starts as one never seen. */
  forget(id: string): void;
  /** Appends a record to the session's recent ones, keeping the newest `keep`. */
  remember(id: string, record: R, keep: number): void;
  /** A store shared by several gateways (state/redis-store); absent for one process's memory. */
  readonly shared?: SharedState;
}

/**
 * How a decision is made atomically per session across gateways: under the session's lease the
 * store holds its current state; what the decision commits is installed by `release` (a
 * compare-and-set on the state's version), or nothing is and the decision must not take effect.
 */
export interface SharedState {
  /** Takes the session's lease with its state brought up to date. Throws E_STORE_DOWN. */
  lease(id: string): Promise<Lease>;
  /**
   * Brings the session's state up to date without a lease, for a decision that changes nothing
   * (one read, no write); false when this gateway is deciding for the session now (take the
   * lease instead). Throws E_STORE_DOWN.
   */
  peek(id: string): Promise<boolean>;
  /**
   * Calls `listener` with each session whose state was read in outside a decision (another
   * gateway's change, a store restored): a view ordered on what this gateway journaled must
   * place it again.
   */
  onRefreshed(listener: (id: string) => void): void;
}

export interface Lease {
  /** Writes what was committed under the lease and gives it up. Throws E_STORE_DOWN. */
  release(): Promise<void>;
}

/** One session's state as the embedded store keeps it (and a shared store decodes it). */
export interface Live {
  readonly counts: Map<string, number>;
  pausedAt: number | null;
  pausedBy: string | null;
  events: number;
  readonly marks: Map<string, Mark>;
  /** NO_PENDING until one waits. */
  pending: PendingEvents;
  readonly sent: Map<number, Sent>;
  sentBytes: number;
  readonly budgets: Map<string, LiveBudget>;
}

export interface LiveBudget {
  start: number;
  used: number;
  extra: number;
  hosts: Set<string> | null;
}

/** The embedded store: one process's memory, rebuilt from the journal at start. */
export class MemoryStore<R> implements TrajectoryStore<R> {
  readonly approvals = new ApprovalSet();
  readonly denies = new DenySet([]);
  readonly #sessions = new Map<string, Live>();
  /** The session asked for last: a decision asks for it, then commits to it. */
  #lastId = '';
  #last: Live | undefined;
  readonly #recent = new Map<string, R[]>();

  session(id: string): SessionState | undefined {
    return this.#find(id);
  }

  sessions(): IterableIterator<[string, SessionState]> {
    return this.#sessions.entries();
  }

  commit(id: string, change: SessionChange): void {
    applyChange(this.live(id), change);
  }

  resume(id: string, reset: boolean, keepMarks = false): void {
    applyResume(this.live(id), reset, keepMarks);
  }

  recent(id: string): readonly R[] {
    return this.#recent.get(id) ?? [];
  }

  remember(id: string, record: R, keep: number): void {
    let ring = this.#recent.get(id);
    if (!ring) this.#recent.set(id, (ring = []));
    ring.push(record);
    if (ring.length > keep) ring.splice(0, ring.length - keep);
  }

  forget(id: string): void {
    this.#sessions.delete(id);
    this.#recent.delete(id);
    if (id === this.#lastId) this.#last = undefined;
  }

  #find(id: string): Live | undefined {
    if (id === this.#lastId && this.#last !== undefined) return this.#last;
    const state = this.#sessions.get(id);
    if (state !== undefined) {
      this.#lastId = id;
      this.#last = state;
    }
    return state;
  }

  /** The session's state, created empty when unknown. */
  protected live(id: string): Live {
    let state = this.#find(id);
    if (!state) {
      state = fresh();
      this.#sessions.set(id, state);
    }
    return state;
  }

  /** Replaces the session's state with one read from elsewhere (a shared store). */
  protected adopt(id: string, state: Live): void {
    this.#sessions.set(id, state);
    if (id === this.#lastId) this.#last = state;
  }
}

/** Installs one committed change (MemoryStore.commit). */
export function applyChange(state: Live, change: SessionChange): void {
  const { counted, pause } = change;
  if (counted) for (const key in counted) state.counts.set(key, counted[key] as number);
  if (pause && state.pausedAt === null) {
    state.pausedAt = pause.at;
    state.pausedBy = pause.by;
  }
  if (change.events !== undefined) state.events = change.events;
  if (change.marks) for (const mark of change.marks) state.marks.set(mark.rule, mark);
  if (change.settled !== undefined && state.pending instanceof PendingRing)
    state.pending.remove(change.settled);
  if (change.pending) {
    const ring = state.pending instanceof PendingRing ? state.pending : new PendingRing();
    ring.push(change.pending);
    state.pending = ring;
  }
  if (change.sent) addSent(state, change.sent);
  if (change.budgeted)
    for (const name in change.budgeted)
      stepBudget(state, name, change.budgeted[name] as BudgetStep);
}

/** Installs a budget's step: a new window starts empty, with no top-up and no hosts. */
function stepBudget(state: Live, name: string, step: BudgetStep): void {
  let use = state.budgets.get(name);
  if (use === undefined || use.start !== step.start) {
    use = { start: step.start, used: 0, extra: 0, hosts: null };
    state.budgets.set(name, use);
  }
  use.used = step.used;
  if (step.extra !== undefined) use.extra = step.extra;
  if (step.host !== undefined) (use.hosts ??= new Set()).add(step.host);
}

/** An operator's resume (MemoryStore.resume). */
export function applyResume(state: Live, reset: boolean, keepMarks: boolean): void {
  state.pausedAt = null;
  state.pausedBy = null;
  if (reset) {
    state.counts.clear();
    state.budgets.clear();
  }
  if (keepMarks) return;
  state.marks.clear();
  state.pending = NO_PENDING;
  state.sent.clear();
  state.sentBytes = 0;
}

export function fresh(): Live {
  return {
    counts: new Map(),
    pausedAt: null,
    pausedBy: null,
    events: 0,
    marks: new Map(),
    pending: NO_PENDING,
    sent: new Map(),
    sentBytes: 0,
    budgets: new Map(),
  };
}

/**
 * Entries come in outcome order, so the old ones are at the front. A request's bytes are its
 * total so far (a live flow reports as it sends, then its outcome): a larger total replaces
 * the entry and moves it last, a repeated or smaller one changes nothing.
 */
function addSent(state: Live, s: NonNullable<SessionChange['sent']>): void {
  const old = state.sent.get(s.rid)?.bytes ?? 0;
  if (s.bytes > old) {
    state.sent.delete(s.rid);
    state.sent.set(s.rid, { ts: s.ts, bytes: s.bytes });
    state.sentBytes += s.bytes - old;
  }
  for (const [rid, old] of state.sent) {
    if (old.ts >= s.since) break;
    state.sent.delete(rid);
    state.sentBytes -= old.bytes;
  }
}
