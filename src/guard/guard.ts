import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import type { Approval, ApprovalSpec } from './approvals.js';
import { ApprovalSet, compileApproval } from './approvals.js';
import type { Boundary, GuardPolicy } from './policy.js';
import { countKey, crosses } from './policy.js';

export type Verdict = 'ALLOW' | 'REVIEW' | 'PAUSE';

export interface Decision {
  readonly verdict: Verdict;
  /** The boundary that decided (the most severe one crossed), or null. */
  readonly boundary: string | null;
  /** That boundary's count after this event; 0 when nothing was crossed. */
  readonly count: number;
  readonly reason: string;
  readonly approved: boolean;
  /** The approval pattern that matched, when one did. */
  readonly approvedBy: string | null;
  /** Every counter this event bumped and its new value; what `commit` installs. */
  readonly counted: Readonly<Record<string, number>> | null;
}

/** What a decision changes, as its event record keeps it. */
export interface Change {
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly counted?: Readonly<Record<string, number>> | null | undefined;
}

export interface SessionState {
  readonly counts: ReadonlyMap<string, number>;
  /** When the session paused (ms), or null while it runs. */
  readonly pausedAt: number | null;
  /** The boundary whose crossing paused it. */
  readonly pausedBy: string | null;
}

/** Only `commit`, `resume` and a restart's replay of them write to it. */
interface Live {
  readonly counts: Map<string, number>;
  pausedAt: number | null;
  pausedBy: string | null;
}

const RANK: Record<Verdict, number> = { ALLOW: 0, REVIEW: 1, PAUSE: 2 };
const EMPTY: SessionState = { counts: new Map(), pausedAt: null, pausedBy: null };

/**
 * The trajectory guard of the seed article, generalised to configured boundaries. Pure: its
 * answers depend only on the policy and the events and operator actions fed to it, in order
 * (time comes from `event.ts`), so replaying a journal rebuilds the same state. `inspect`
 * decides on a copy; state moves only by `commit`, `approve` and `resume`, each called once
 * its record is written (a failed write changes nothing).
 */
export class Guard {
  readonly policy: GuardPolicy;
  readonly approvals = new ApprovalSet();
  readonly #sessions = new Map<string, Live>();
  readonly #approvedDecisions = new WeakMap<Approval, Decision>();

  constructor(policy: GuardPolicy) {
    this.policy = policy;
    for (const a of policy.allow) this.approvals.add(a);
  }

  /**
   * Judges an event against the current state and changes nothing: the decision carries what
   * it would change (`counted`, a PAUSE), for `commit` to install once its record is written.
   * The gateway also asks before resolving a host name (a lookup of an unapproved name would
   * already leak it).
   */
  inspect(event: Event): Decision {
    if (event.denied === undefined) {
      if (event.approved) return MARKED_APPROVED;
      const approval = this.approvals.match(event);
      if (approval) return this.#approvedBy(approval);
    }
    const state = this.#sessions.get(event.session) ?? EMPTY;
    const workspace = this.policy.workspaceFor(event.session);
    let worst: { b: Boundary; n: number; verdict: Verdict } | undefined;
    let counted: Record<string, number> | null = null;
    for (const b of this.policy.boundaries) {
      if (!crosses(b, event, workspace)) continue;
      const key = countKey(this.policy, b, event);
      const n = (state.counts.get(key) ?? 0) + 1;
      (counted ??= {})[key] = n;
      const verdict = verdictAt(b, n);
      if (!worst || RANK[verdict] > RANK[worst.verdict]) worst = { b, n, verdict };
    }
    if (!worst) {
      return {
        verdict: event.denied === undefined ? 'ALLOW' : 'REVIEW',
        boundary: null,
        count: 0,
        reason: event.denied ?? 'no boundary crossed',
        approved: false,
        approvedBy: null,
        counted: null,
      };
    }
    // A refused event is never allowed, whatever the counts say.
    const verdict =
      event.denied !== undefined && worst.verdict === 'ALLOW' ? 'REVIEW' : worst.verdict;
    return {
      verdict,
      boundary: worst.b.name,
      count: worst.n,
      reason: reasonFor(worst.b, worst.n, event, workspace),
      approved: false,
      approvedBy: null,
      counted,
    };
  }

  /** Decisions are immutable: one per approval serves every event it approves. */
  #approvedBy(approval: Approval): Decision {
    let decision = this.#approvedDecisions.get(approval);
    if (decision === undefined) {
      decision = Object.freeze({
        verdict: 'ALLOW',
        boundary: null,
        count: 0,
        reason: `approved by ${JSON.stringify(approval.pattern)}`,
        approved: true,
        approvedBy: approval.pattern,
        counted: null,
      });
      this.#approvedDecisions.set(approval, decision);
    }
    return decision;
  }

  /**
   * A CONNECT whose host and port only method or path patterns allow: nothing approves the
   * tunnel as such, so its requests must be read and judged one by one.
   */
  needsInspection(event: Event): boolean {
    return (
      this.approvals.match(event) === undefined &&
      this.approvals.matchAuthority(event) !== undefined
    );
  }

  /** The approval that covers an event, if any; changes nothing. */
  approvalFor(event: Event): Approval | undefined {
    return this.approvals.match(event);
  }

  /** Adds an approval; throws E_PATTERN_INVALID for a pattern that does not parse. */
  approve(spec: ApprovalSpec): Approval {
    const approval = compileApproval(spec);
    this.approvals.add(approval);
    return approval;
  }

  /**
   * Installs what a decision changed, or its event record at restart (the same values): each
   * counter's new value and a PAUSE; expired approvals go. Called once the record is written,
   * with no await since `inspect`, so it replaces the state the decision was made on. The
   * values are absolute: committing one decision twice is harmless.
   */
  commit(session: string, at: number, change: Change): void {
    this.approvals.prune(at);
    const { counted } = change;
    if (!counted && change.verdict !== 'PAUSE') return;
    const state = this.state(session);
    if (counted) for (const key in counted) state.counts.set(key, counted[key] as number);
    if (change.verdict === 'PAUSE' && state.pausedAt === null) {
      state.pausedAt = at;
      state.pausedBy = change.boundary;
    }
  }

  /** Unpauses; counts are kept unless `reset` (the operator said so explicitly). */
  resume(session: string, reset: boolean): void {
    const state = this.state(session);
    state.pausedAt = null;
    state.pausedBy = null;
    if (reset) state.counts.clear();
  }

  session(id: string): SessionState | undefined {
    return this.#sessions.get(id);
  }

  sessions(): IterableIterator<[string, SessionState]> {
    return this.#sessions.entries();
  }

  private state(session: string): Live {
    let state = this.#sessions.get(session);
    if (!state) {
      state = { counts: new Map(), pausedAt: null, pausedBy: null };
      this.#sessions.set(session, state);
    }
    return state;
  }
}

/** `ALLOW`, `REVIEW: network`, `PAUSE: workspace`: the seed article's notation. */
export function formatVerdict(decision: Decision): string {
  return decision.verdict === 'ALLOW' ? 'ALLOW' : `${decision.verdict}: ${decision.boundary}`;
}

function verdictAt(b: Boundary, n: number): Verdict {
  if (n >= b.pauseAt) return 'PAUSE';
  return b.reviewAt !== null && n >= b.reviewAt ? 'REVIEW' : 'ALLOW';
}

const MARKED_APPROVED: Decision = Object.freeze({
  verdict: 'ALLOW',
  boundary: null,
  count: 0,
  reason: 'marked approved',
  approved: true,
  approvedBy: null,
  counted: null,
});

function reasonFor(b: Boundary, n: number, event: Event, workspace: string): string {
  const what =
    event.denied !== undefined
      ? `${event.denied} (${destination(event.subject)})`
      : b.outside === 'workspace'
        ? `${event.kind} outside the workspace ${workspace}`
        : event.subject.type === 'network'
          ? `unapproved network access to ${destination(event.subject)}`
          : `${event.kind} of ${event.target}`;
  const review = b.reviewAt === null ? '' : `review at ${b.reviewAt}, `;
  return `${what}: ${b.name} crossing ${n} (${review}pause at ${b.pauseAt})`;
}
