import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import type { Verdict } from '../wire.js';
import type { Boundary } from './compiled-policy.js';

/** The guard's answers (guard.ts) and how they are worded. */
export type { Verdict };

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
  /** The deny pattern that refused it (`network.deny: …`), when one did. */
  readonly deniedBy?: string;
  /** The trajectory rule that named it (`boundary` too); `after`: the seq of its mark. */
  readonly rule?: { readonly name: string; readonly after?: number };
  /** Trajectory fields, set only when `policy.sequences` has rules (see sequences.ts). */
  readonly marks?: readonly string[];
  readonly onFailure?: readonly string[];
  readonly eventNo?: number;
  /** What the event counts toward each budget it uses (budgets.ts); absent: none. */
  readonly budgeted?: Readonly<Record<string, BudgetStep>> | undefined;
}

/**
 * A budget's use after an event, as its record keeps it (absolute): the window's start (ms),
 * what it used, a host it adds (`hosts`); `extra`, the top-ups in the window (a top-up only).
 * A `start` other than the session's opens a new window.
 */
export interface BudgetStep {
  readonly start: number;
  readonly used: number;
  readonly host?: string;
  readonly extra?: number;
}

/** The record of a request that came while its session was paused: it decides nothing. */
export const HELD: Decision = {
  verdict: 'PAUSE',
  boundary: null,
  count: 0,
  reason: 'session paused: held until an operator decides',
  approved: false,
  approvedBy: null,
  counted: null,
};

/** What a decision changes, as its event record keeps it. */
export interface Change {
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly counted?: Readonly<Record<string, number>> | null | undefined;
  /** Rules whose mark this event sets, and those it marks if its outcome is a failure. */
  readonly marks?: readonly string[] | undefined;
  readonly onFailure?: readonly string[] | undefined;
  /** The session's count of judged events, this one included (absolute). */
  readonly eventNo?: number | undefined;
  readonly budgeted?: Readonly<Record<string, BudgetStep>> | undefined;
}

/**
 * The event a committed decision belongs to: its record's seq, its request id (when not its
 * first record), its kind and target (a mark's `what` is `kind target`).
 */
export interface EventRef {
  readonly seq: number;
  readonly rid?: number | undefined;
  readonly kind: string;
  readonly target: string;
}

/** How an event's request ended, as `Guard.outcome` takes it. */
export interface Outcome {
  /** The upstream (or the tool, or the runner's report) failed. */
  readonly failed: boolean;
  readonly bytesUp: number;
  /** When the outcome was recorded (ms). */
  readonly ts: number;
}

/** Severity: the most severe verdict wins. */
export const RANK: Readonly<Record<Verdict, number>> = { ALLOW: 0, REVIEW: 1, PAUSE: 2 };

/** `ALLOW`, `REVIEW: network`, `PAUSE: workspace`: the seed article's notation. */
export function formatVerdict(decision: Decision): string {
  return decision.verdict === 'ALLOW' ? 'ALLOW' : `${decision.verdict}: ${decision.boundary}`;
}

export function verdictAt(b: Boundary, n: number): Verdict {
  if (n >= b.pauseAt) return 'PAUSE';
  return b.reviewAt !== null && n >= b.reviewAt ? 'REVIEW' : 'ALLOW';
}

export const MARKED_APPROVED: Decision = Object.freeze({
  verdict: 'ALLOW',
  boundary: null,
  count: 0,
  reason: 'marked approved',
  approved: true,
  approvedBy: null,
  counted: null,
});

/** An event an approval (`pattern`) covers. */
export function approvedAs(pattern: string): Decision {
  return {
    verdict: 'ALLOW',
    boundary: null,
    count: 0,
    reason: `approved by ${JSON.stringify(pattern)}`,
    approved: true,
    approvedBy: pattern,
    counted: null,
  };
}

/** Why an event crossed a boundary, for its record and the refusal the agent reads. */
export function reasonFor(
  b: Boundary,
  n: number,
  event: Event,
  workspace: string,
  denied: string | undefined,
  miss: string | null,
): string {
  const what =
    denied !== undefined
      ? `${denied} (${destination(event.subject)})`
      : b.outside === 'workspace'
        ? `${event.kind} outside the workspace ${workspace}`
        : event.subject.type === 'network'
          ? `unapproved network access to ${destination(event.subject)}${miss === null ? '' : ` (${miss})`}`
          : `${event.kind} of ${event.target}`;
  const review = b.reviewAt === null ? '' : `review at ${b.reviewAt}, `;
  return `${what}: ${b.name} crossing ${n} (${review}pause at ${b.pauseAt})`;
}
