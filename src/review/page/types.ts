// The admin API's JSON as the page reads it (src/review/api.ts is the source of truth; the page
// is compiled apart from the server, for the browser, so the shapes are restated here).

export type Verdict = 'ALLOW' | 'REVIEW' | 'PAUSE';

/** `flagged`: a REVIEW since the last operator action on the session (and not paused). */
export type SessionState = 'active' | 'flagged' | 'paused';

export interface SessionView {
  readonly id: string;
  readonly state: SessionState;
  /** How many REVIEWs flag it (absent from gateways older than the page). */
  readonly flagged?: number;
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
  /** `a<seq>` for an operator's; config entries have ids too but cannot be revoked. */
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: string | null;
  readonly origin: 'config' | 'operator';
  /** `network.allow`, `agents.<id>.allow`, `roles.<name>.allow` or `operator`. */
  readonly source: string;
  readonly by: string | null;
}

/** A deny pattern: refused whatever allows or approves it. */
export interface DenyView {
  readonly id: string;
  readonly pattern: string;
  readonly session: string | null;
  readonly origin: 'config' | 'operator';
  readonly source: string;
  readonly by: string | null;
}

/** `GET /api/events/:seq`: the event and the approval that would fit it. */
export interface EventAnswer {
  readonly event: TrajEvent;
  readonly suggestion: { readonly pattern: string; readonly kind: string };
}

export interface CapturedPart {
  readonly headers: readonly [string, string][];
  readonly body: string;
  readonly encoding: 'text' | 'base64';
  readonly decoded?: readonly string[];
  readonly size: number;
  readonly truncated: boolean;
}

/** `GET /api/sessions/:id/captures/:rid`. */
export interface CapturedExchange {
  readonly rid: number;
  readonly session: string;
  readonly forwarded: boolean;
  readonly request: CapturedPart & { readonly method: string; readonly url: string };
  readonly response: (CapturedPart & { readonly status: number }) | null;
}

export interface SessionDetail extends SessionView {
  readonly pause: PauseRecord | null;
  readonly heldRequests: readonly HeldView[];
  readonly recent: readonly TrajEvent[];
  readonly approvals: readonly ApprovalView[];
  /** The REVIEW events that flag the session, oldest first. */
  readonly reviews?: readonly TrajEvent[];
  readonly denies?: readonly DenyView[];
  /** The effective config allowlist: network.allow, the agent's and its roles' allow. */
  readonly allowlist?: readonly string[];
  /** `capture.bodies`: requests are captured. */
  readonly captures?: boolean;
}

export interface EventsPage {
  readonly events: TrajEvent[];
  readonly next: number | null;
}

/** `GET /api/health`: whether the journal can be written. */
export interface Health {
  readonly status: 'ok' | 'degraded';
  readonly journal: {
    readonly path: string;
    readonly writable: boolean;
    readonly failingSince: string | null;
    readonly failures: number;
    readonly lastFailure: { readonly at: string; readonly error: string } | null;
  };
}
