import type { Budget, Sequence } from './compiled-policy.js';
import { volumeWindow } from './sequences.js';
import type { Mark, SessionState } from './store.js';

/** What is known of a session, beyond the guard's state, when it is considered for eviction. */
export interface IdleFacts {
  /** The guard's state of it; undefined when it never counted, paused or marked anything. */
  readonly state: SessionState | undefined;
  /** REVIEWs no operator has answered yet. */
  readonly flagged: number;
  /** Operator approvals or deny patterns naming this session (not global ones). */
  readonly ownRules: boolean;
  readonly held: boolean;
  /** Requests, tunnels or tool calls still in flight (action/flow-registry.ts). */
  readonly flows: boolean;
  /** Requests being judged: no flow yet, their ruling awaits a lookup (or a lease). */
  readonly judging: boolean;
  /** Its last activity (ms). */
  readonly lastActivity: number;
}

/**
 * Why the session must be kept at `now`, or null when it may be forgotten: it is evicted only
 * when nothing it did could still raise a verdict. Paused and flagged sessions are kept, so are
 * ones with held requests, open flows, requests being judged, approvals or deny patterns of
 * their own, a nonzero count (forgetting it would let the agent cross its boundaries again from
 * zero), a trajectory mark still within its rule's reach or bytes sent still within a volume
 * window, or a budget's window still open (forgetting it would give the agent a fresh budget,
 * and drop an operator's top-up). Pending failures do not keep it: an outcome can only come through an open flow, and a
 * runner's late result for a forgotten call counts as a failure of the session (the stricter
 * reading).
 */
export function keptBecause(
  f: IdleFacts,
  rules: readonly Sequence[],
  now: number,
  idleMs: number,
  budgets: readonly Budget[] = [],
): string | null {
  const s = f.state;
  if (s !== undefined && s.pausedAt !== null) return 'paused';
  if (f.flagged > 0) return 'flagged';
  if (f.held) return 'held requests';
  if (f.flows) return 'open flows';
  if (f.judging) return 'requests being judged';
  if (f.ownRules) return 'approvals of its own';
  if (now - f.lastActivity < idleMs) return 'active';
  if (s === undefined) return null;
  for (const n of s.counts.values()) if (n > 0) return 'counts';
  for (const mark of s.marks.values()) if (inForce(mark, rules, now)) return 'marks';
  const window = volumeWindow(rules);
  for (const sent of s.sent.values()) if (sent.ts >= now - window) return 'bytes sent';
  for (const b of budgets) {
    const use = s.budgets.get(b.name);
    if (use !== undefined && now < use.start + b.windowMs) return 'budgets';
  }
  return null;
}

/**
 * A mark its rule can still reach: one of a rule that is gone, or whose time window has passed,
 * can fire nothing. A window counted in events never passes while the session is idle.
 */
function inForce(mark: Mark, rules: readonly Sequence[], now: number): boolean {
  const rule = rules.find((r) => r.name === mark.rule);
  if (rule === undefined || rule.type !== 'sequence') return false;
  return rule.within === null || !('ms' in rule.within) || now - mark.ts <= rule.within.ms;
}
