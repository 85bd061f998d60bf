import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import type { Verdict } from '../wire.js';
import type { Boundary } from './policy.js';

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
}

/** What a decision changes, as its event record keeps it. */
export interface Change {
  readonly verdict: Verdict;
  readonly boundary: string | null;
  readonly counted?: Readonly<Record<string, number>> | null | undefined;
}

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
