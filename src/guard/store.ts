import { ApprovalSet } from './approvals.js';
import { DenySet } from './denies.js';

/** What the guard remembers of one session. */
export interface SessionState {
  readonly counts: ReadonlyMap<string, number>;
  /** When the session paused (ms), or null while it runs. */
  readonly pausedAt: number | null;
  /** The boundary whose crossing paused it. */
  readonly pausedBy: string | null;
}

/** What one committed decision changes in its session. */
export interface SessionChange {
  /** Counters' new values: absolute, so that installing one change twice is harmless. */
  readonly counted: Readonly<Record<string, number>> | null;
  /** Pauses the session at `at` by boundary `by`, unless it is paused already. */
  readonly pause: { readonly at: number; readonly by: string | null } | null;
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
  /** Unpauses; counts are cleared only with `reset`. */
  resume(id: string, reset: boolean): void;
  /** The session's newest records, oldest first. */
  recent(id: string): readonly R[];
  /** Appends a record to the session's recent ones, keeping the newest `keep`. */
  remember(id: string, record: R, keep: number): void;
}

interface Live {
  readonly counts: Map<string, number>;
  pausedAt: number | null;
  pausedBy: string | null;
}

/** The embedded store: one process's memory, rebuilt from the journal at start. */
export class MemoryStore<R> implements TrajectoryStore<R> {
  readonly approvals = new ApprovalSet();
  readonly denies = new DenySet([]);
  readonly #sessions = new Map<string, Live>();
  readonly #recent = new Map<string, R[]>();

  session(id: string): SessionState | undefined {
    return this.#sessions.get(id);
  }

  sessions(): IterableIterator<[string, SessionState]> {
    return this.#sessions.entries();
  }

  commit(id: string, change: SessionChange): void {
    const state = this.#live(id);
    const { counted, pause } = change;
    if (counted) for (const key in counted) state.counts.set(key, counted[key] as number);
    if (pause && state.pausedAt === null) {
      state.pausedAt = pause.at;
      state.pausedBy = pause.by;
    }
  }

  resume(id: string, reset: boolean): void {
    const state = this.#live(id);
    state.pausedAt = null;
    state.pausedBy = null;
    if (reset) state.counts.clear();
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

  #live(id: string): Live {
    let state = this.#sessions.get(id);
    if (!state) {
      state = { counts: new Map(), pausedAt: null, pausedBy: null };
      this.#sessions.set(id, state);
    }
    return state;
  }
}
