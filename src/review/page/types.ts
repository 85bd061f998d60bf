// The admin API's JSON as the page reads it (src/review/api.ts is the source of truth; the page
// is compiled apart from the server, for the browser, so the shapes are restated here).

export type Verdict = 'ALLOW' | 'REVIEW' | 'PAUSE';

export interface SessionView {
  readonly id: string;
  readonly state: 'active' | 'paused';
  readonly counts: Record<string, number>;
  readonly pausedAt: string | null;
  readonly pausedBy: string | null;
  readonly held: number;
  readonly lastActivity: string | null;
  readonly events: number;
}

/** An event as the rings, pause records and the events route carry it. */
export interface TrajEvent {
  readonly seq: number;
  readonly ts: string;
  readonly session: string;
  readonly source: string;
  readonly kind: string;
  readonly target: string;
  readonly method?: string;
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly count: number;
  readonly reason: string;
  readonly approved: boolean;
  readonly approvedBy?: string;
  readonly denied?: string;
  readonly held?: true;
  readonly rid?: number;
  /** The status the request ended with (events route), when its outcome is journaled. */
  readonly status?: number | null;
}

export interface PauseRecord {
  readonly session: string;
  readonly pausedAt: string;
  readonly boundary: string | null;
  readonly count: number;
  readonly reason: string;
  readonly trigger: TrajEvent;
  readonly recent: readonly TrajEvent[];
  readonly held: readonly { what: string; since: number; deadline: number }[];
  readonly restored: boolean;
}

export interface HeldView {
  readonly id: number;
  readonly what: string;
  readonly since: string;
  readonly deadline: string;
  readonly waitedMs: number;
  readonly timeoutInMs: number;
}

export interface ApprovalView {
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: string | null;
  readonly origin: 'config' | 'operator';
}

export interface SessionDetail extends SessionView {
  readonly pause: PauseRecord | null;
  readonly heldRequests: readonly HeldView[];
  readonly recent: readonly TrajEvent[];
  readonly approvals: readonly ApprovalView[];
}

export interface EventsPage {
  readonly events: TrajEvent[];
  readonly next: number | null;
}
