import { BUDGET } from '../event/own-boundaries.js';
import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import type { Budget } from './compiled-policy.js';
import type { BudgetStep, Decision } from './decision.js';
import { RANK } from './decision.js';
import type { BudgetUse, SessionState } from './store.js';

/**
 * The pure counting of budgets (`policy.budgets`): per session and budget a fixed window that
 * opens with the first thing counted and lasts `within`; what it used and what operators topped
 * up in it (`extra`). Time comes from the events' and outcomes' `ts` only. An event that would
 * take a budget past its limit (a request, a tool call, a host not seen in the window; for
 * bytes sent up, a network event once the window's bytes reached it) answers the budget's
 * verdict and counts toward none; so does any event another rule pauses (it is held and judged
 * again), so that each request is counted once.
 */

const NEW_WINDOW: BudgetUse = { start: 0, used: 0, extra: 0, hosts: null };

/** The budget's use in the window open at `ts` (a fresh one starting at `ts` when none is). */
export function useAt(state: SessionState, b: Budget, ts: number): BudgetUse {
  const use = state.budgets.get(b.name);
  if (use !== undefined && ts < use.start + b.windowMs) return use;
  return { ...NEW_WINDOW, start: ts };
}

/** The budget's limit in the window of `use`: its own plus the top-ups. */
export function limitOf(b: Budget, use: BudgetUse): number {
  return b.limit + use.extra;
}

function isToolCall(event: Event): boolean {
  if (event.source === 'bridge' || event.source === 'ingest') return true;
  return event.source === 'replay' && event.kind !== 'network';
}

/** What `event` adds to the budget: its step, `over` when it would exceed; null: nothing. */
function stepOf(
  b: Budget,
  use: BudgetUse,
  event: Event,
): { step: BudgetStep | null; over: boolean } | null {
  const limit = limitOf(b, use);
  switch (b.measure) {
    case 'requests':
    case 'toolCalls': {
      if (b.measure === 'toolCalls' && !isToolCall(event)) return null;
      const used = use.used + 1;
      return { step: { start: use.start, used }, over: used > limit };
    }
    case 'hosts': {
      if (event.subject.type !== 'network') return null;
      const host = event.subject.host;
      if (use.hosts?.has(host) === true) return null;
      const used = use.used + 1;
      return { step: { start: use.start, used, host }, over: used > limit };
    }
    case 'bytesUp':
      // Bytes are counted from outcomes; what is reached stops further egress.
      return event.subject.type === 'network' ? { step: null, over: use.used >= limit } : null;
  }
}

/**
 * The decision with the budgets applied: the most severe budget reached answers when it is at
 * least as severe as `d` (named `budget`, its `rule` the budget); `budgeted` carries what each
 * budget counts of the event, unless it is paused or a budget refused it. `enforce` false (an
 * operator let the event through once): counted, never refused.
 */
export function applyBudgets(
  budgets: readonly Budget[],
  state: SessionState,
  event: Event,
  d: Decision,
  enforce: boolean,
): Decision {
  let steps: Record<string, BudgetStep> | undefined;
  let reached: { b: Budget; use: BudgetUse } | null = null;
  for (const b of budgets) {
    const use = useAt(state, b, event.ts);
    const s = stepOf(b, use, event);
    if (s === null) continue;
    if (s.over && enforce) {
      if (reached === null || RANK[b.verdict] > RANK[reached.b.verdict]) reached = { b, use };
    } else if (s.step !== null) (steps ??= {})[b.name] = s.step;
  }
  if (reached !== null && RANK[reached.b.verdict] >= RANK[d.verdict]) {
    const { b, use } = reached;
    return {
      ...d,
      verdict: b.verdict,
      boundary: BUDGET,
      reason: budgetReason(b, use, event, d),
      rule: { name: b.name },
      budgeted: undefined,
    };
  }
  if (reached !== null || d.verdict === 'PAUSE' || steps === undefined) return d;
  return { ...d, budgeted: steps };
}

/** `calls: network to api.test:443 would take requests past 500 (500 used within 1h); …`. */
function budgetReason(b: Budget, use: BudgetUse, event: Event, d: Decision): string {
  const what =
    event.subject.type === 'network'
      ? `${event.kind} to ${destination(event.subject)}`
      : `${event.kind} ${event.target}`;
  const limit = limitOf(b, use);
  const of =
    b.measure === 'bytesUp'
      ? `${use.used} of ${limit} bytes sent up`
      : `${use.used} of ${limit} ${b.measure} used`;
  const topped = use.extra > 0 ? `, ${b.limitText} + ${use.extra} topped up` : '';
  const also = d.verdict === 'ALLOW' ? '' : `; also ${d.verdict}: ${d.reason}`;
  return `budget ${b.name}: ${what} after ${of} within ${b.windowText}${topped} (top up to go on)${also}`;
}

/**
 * `added` bytes sent up (a request's outcome, or a live flow's report, beyond what it had
 * reported): each bytesUp budget's step, or undefined when none counts them.
 */
export function bytesSteps(
  budgets: readonly Budget[],
  state: SessionState,
  added: number,
  ts: number,
): Record<string, BudgetStep> | undefined {
  if (added <= 0) return undefined;
  let steps: Record<string, BudgetStep> | undefined;
  for (const b of budgets) {
    if (b.measure !== 'bytesUp') continue;
    const use = useAt(state, b, ts);
    (steps ??= {})[b.name] = { start: use.start, used: use.used + added };
  }
  return steps;
}

/** Whether a bytesUp budget is reached at `ts` (open flows are then judged again). */
export function bytesReached(budgets: readonly Budget[], state: SessionState, ts: number): boolean {
  return budgets.some((b) => {
    if (b.measure !== 'bytesUp') return false;
    const use = useAt(state, b, ts);
    return use.used >= limitOf(b, use);
  });
}

/** The longest window of a bytesUp budget (ms): bytes sent per request are kept that long. */
export function bytesWindow(budgets: readonly Budget[]): number {
  let ms = 0;
  for (const b of budgets) if (b.measure === 'bytesUp' && b.windowMs > ms) ms = b.windowMs;
  return ms;
}

/** An operator's top-up of `amount` at `at`: the budget's step with its new `extra`. */
export function topUpStep(b: Budget, state: SessionState, amount: number, at: number): BudgetStep {
  const use = useAt(state, b, at);
  return { start: use.start, used: use.used, extra: use.extra + amount };
}
