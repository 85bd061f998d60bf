import type { Event } from '../event/event.js';
import type { Change, Decision, EventRef, Outcome, Verdict } from './decision.js';
import { approvedAs, MARKED_APPROVED, RANK, reasonFor, verdictAt } from './decision.js';
import type { Approval, ApprovalSet, ApprovalSpec, RequiredProtocols } from './approvals.js';
import { compileApproval } from './approvals.js';
import type { Deny, DenySet, DenySpec } from './denies.js';
import { compileDeny } from './denies.js';
import { explainMiss } from './explain.js';
import type { Boundary, Budget, GuardPolicy } from './compiled-policy.js';
import { TrajgateError } from '../errors.js';
import { countKey, crosses } from './policy.js';
import { CREDENTIAL_EXFILTRATION, exfiltrationReason } from './exfiltration.js';
import { protectedReach, protectedReason, TRAJGATE_FILES } from './protected.js';
import { TOOL_CHANGED, toolChangedReason } from './tool-changed.js';
import { applySequences, failureMarks, numbered, volumeWindow } from './sequences.js';
import { applyBudgets, bytesReached, bytesSteps, bytesWindow, topUpStep } from './budgets.js';
import type { Mark, SessionState, SharedState, TrajectoryStore } from './store.js';
import { EMPTY, MemoryStore } from './store.js';

export type { BudgetStep, Change, Decision, EventRef, Outcome, Verdict } from './decision.js';
export { formatVerdict } from './decision.js';
export type { SessionState } from './store.js';

const NO_REF: EventRef = { seq: 0, kind: '', target: '' };

/**
 * The trajectory guard of the seed article, generalised to configured boundaries. Pure: its
 * answers depend only on the policy and the events and operator actions fed to it, in order
 * (time comes from `event.ts`), so replaying a journal rebuilds the same state. `inspect`
 * decides on a copy; state moves only by `commit`, `approve`, `addDeny`, `revoke` and `resume`,
 * each called once its record is written (a failed write changes nothing), and by a reload's
 * `replacePolicy`. trajgate's own files, then deny patterns, are checked before anything
 * approves. What it remembers lives in `store`: the rule is here, the state there.
 */
export class Guard {
  #policy: GuardPolicy;
  readonly #store: TrajectoryStore<unknown>;
  readonly approvals: ApprovalSet;
  readonly denies: DenySet;
  readonly #approvedDecisions = new WeakMap<Approval, Decision>();
  readonly #approvalOf = new WeakMap<Decision, Approval>();
  /** How long bytes sent are remembered (the largest volume rule's or bytesUp budget's window). */
  #sentWindow: number;

  constructor(policy: GuardPolicy, store: TrajectoryStore<unknown> = new MemoryStore()) {
    this.#store = store;
    this.approvals = store.approvals;
    this.denies = store.denies;
    this.#policy = policy;
    this.#sentWindow = sentWindow(policy);
    this.approvals.replaceConfig(policy.allow);
    this.denies.replaceConfig(policy.deny);
  }

  get policy(): GuardPolicy {
    return this.#policy;
  }

  /** Set when the state is shared with other gateways: decisions then take its lease. */
  get shared(): SharedState | undefined {
    return this.#store.shared;
  }

  /**
   * A reloaded configuration: boundaries, workspaces, allowlists and `network.deny` change at
   * once; sessions' counts and pauses and operators' approvals and denies stay.
   */
  replacePolicy(policy: GuardPolicy): void {
    this.#policy = policy;
    this.#sentWindow = sentWindow(policy);
    this.approvals.replaceConfig(policy.allow);
    this.denies.replaceConfig(policy.deny);
  }

  /**
   * Judges an event against the current state and changes nothing: the decision carries what
   * it would change (`counted`, a PAUSE, trajectory marks), for `commit` to install once its
   * record is written. The gateway also asks before resolving a host name (a lookup of an
   * unapproved name would already leak it). Trajectory rules judge what the counting decided,
   * approved events included, but not one an operator let through (`approved` on the event).
   */
  inspect(event: Event): Decision {
    // trajgate's own files go before anything: no approval, approve-once or pattern covers them.
    const own = protectedReach(this.#policy.protected, event);
    if (own !== null) return this.#atOnce(event, TRAJGATE_FILES, protectedReason(event, own));
    // A sentinel where it does not belong is an attempt, whatever allows the destination.
    if (event.exfiltration !== undefined)
      return this.#atOnce(event, CREDENTIAL_EXFILTRATION, exfiltrationReason(event));
    // A session shown a changed tool list may be acting on its new text: no approval covers it.
    if (event.toolChange !== undefined)
      return this.#atOnce(event, TOOL_CHANGED, toolChangedReason(event));
    // A deny pattern goes first: nothing approves what it refuses.
    const deny = this.denies.match(event);
    const denied = event.denied ?? deny?.reason;
    if (denied === undefined) {
      // A journal's event approved by a pattern, replayed: approved by it, as live.
      if (event.approved && event.approvedBy !== undefined)
        return this.#rules(event, approvedAs(event.approvedBy));
      if (event.approved) return this.#rules(event, MARKED_APPROVED);
      const approval = this.approvals.match(event);
      if (approval) return this.#rules(event, this.#approvedBy(approval));
    }
    const byDeny = deny && event.denied === undefined ? { deniedBy: deny.reason } : {};
    const state = this.#store.session(event.session) ?? EMPTY;
    const workspace = this.policy.workspaceFor(event.session);
    let worst: { b: Boundary; n: number; verdict: Verdict } | undefined;
    let counted: Record<string, number> | null = null;
    for (const b of this.policy.boundaries) {
      if (!crosses(b, event, workspace)) continue;
      const key = countKey(this.policy, b.name, event);
      const n = (state.counts.get(key) ?? 0) + 1;
      (counted ??= {})[key] = n;
      const verdict = verdictAt(b, n);
      if (!worst || RANK[verdict] > RANK[worst.verdict]) worst = { b, n, verdict };
    }
    if (!worst) {
      return this.#rules(event, {
        verdict: denied === undefined ? 'ALLOW' : 'REVIEW',
        boundary: null,
        count: 0,
        reason: denied ?? 'no boundary crossed',
        approved: false,
        approvedBy: null,
        counted: null,
        ...byDeny,
      });
    }
    // A refused event is never allowed, whatever the counts say.
    const verdict = denied !== undefined && worst.verdict === 'ALLOW' ? 'REVIEW' : worst.verdict;
    const miss = denied === undefined ? this.#miss(event) : null;
    return this.#rules(event, {
      verdict,
      boundary: worst.b.name,
      count: worst.n,
      reason: reasonFor(worst.b, worst.n, event, workspace, denied, miss),
      approved: false,
      approvedBy: null,
      counted,
      ...byDeny,
    });
  }

  /**
   * The counting decision with the trajectory rules, then the budgets, applied when there are
   * any (none costs one test each); an event an operator let through is only numbered and
   * counted toward budgets.
   */
  #rules(event: Event, counting: Decision): Decision {
    const { sequences, budgets } = this.#policy;
    if (sequences.length === 0 && budgets.length === 0) return counting;
    const state = this.#store.session(event.session) ?? EMPTY;
    const once = counting === MARKED_APPROVED;
    const ruled =
      sequences.length === 0
        ? counting
        : once
          ? numbered(counting, state.events + 1)
          : applySequences(sequences, state, event, counting);
    return budgets.length === 0 ? ruled : applyBudgets(budgets, state, event, ruled, !once);
  }

  /**
   * An event reaching trajgate's own files, carrying a credential's sentinel where it does not
   * belong, or of a session shown a changed tool list: PAUSE at once, counted against its own boundary. Trajectory rules only number it:
   * none may rename or soften it.
   */
  #atOnce(event: Event, boundary: string, reason: string): Decision {
    const state = this.#store.session(event.session) ?? EMPTY;
    const key = countKey(this.#policy, boundary, event);
    const count = (state.counts.get(key) ?? 0) + 1;
    const decision: Decision = {
      verdict: 'PAUSE',
      boundary,
      count,
      reason,
      approved: false,
      approvedBy: null,
      counted: { [key]: count },
    };
    return this.#policy.sequences.length === 0 ? decision : numbered(decision, state.events + 1);
  }

  /** Why the session's network approvals for the event's host did not cover it, or null. */
  #miss(event: Event): string | null {
    if (event.subject.type !== 'network') return null;
    const patterns = this.approvals.naming(event.session, event.subject.host, event.ts);
    return patterns.length === 0 ? null : explainMiss(patterns, event.subject);
  }

  /** Decisions are immutable: one per approval serves every event it approves. */
  #approvedBy(approval: Approval): Decision {
    let decision = this.#approvedDecisions.get(approval);
    if (decision === undefined) {
      decision = Object.freeze(approvedAs(approval.pattern));
      this.#approvedDecisions.set(approval, decision);
      this.#approvalOf.set(decision, approval);
    }
    return decision;
  }

  /**
   * A CONNECT whose host and port only method or path patterns allow, or that a deny naming a
   * method or path covers: the tunnel cannot be judged as such, so its requests must be read
   * and judged one by one.
   */
  mustRead(event: Event): boolean {
    // A deny naming a method or path can only be checked on the requests themselves.
    if (this.approvals.match(event) !== undefined) return this.denies.coversAuthority(event);
    return this.approvals.matchAuthority(event) !== undefined;
  }

  /** What the approvals covering a tunnel require it to carry (see ApprovalSet.protocolsFor). */
  protocolsFor(event: Event): RequiredProtocols | null {
    return this.approvals.protocolsFor(event);
  }

  /**
   * Whether what let a tunnel open still holds for the event that opened it (`approved`: an
   * approval admitted it): the deny pattern that refuses it now, the lapse of every approval
   * covering it, or null while it holds. Revokes, deny patterns and reloads close tunnels by this.
   */
  lapsed(event: Event, approved: boolean): { deniedBy: string } | 'unapproved' | null {
    const decision = this.inspect(event);
    if (decision.deniedBy !== undefined) return { deniedBy: decision.deniedBy };
    return approved && !decision.approved ? 'unapproved' : null;
  }

  /**
   * The approval behind an approved decision of `event` (what admits its flow, and when that
   * ends): the one that made it, found without matching again, or the one that covers it now.
   */
  approvalBehind(decision: Decision, event: Event): Approval | undefined {
    if (!decision.approved || decision.approvedBy === null) return undefined;
    return this.#approvalOf.get(decision) ?? this.approvals.match(event);
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

  /** Adds a deny pattern; throws E_PATTERN_INVALID for a pattern that does not parse. */
  addDeny(spec: DenySpec): Deny {
    const deny = compileDeny(spec);
    this.denies.add(deny);
    return deny;
  }

  /** Removes an operator's approval or deny by id; config entries stay (edit the config). */
  revoke(id: string): Approval | Deny | undefined {
    const rule = this.approvals.byId(id, -Infinity) ?? this.denies.byId(id);
    if (rule === undefined || rule.origin === 'config') return undefined;
    return this.approvals.remove(id) ?? this.denies.remove(id);
  }

  /**
   * Installs what a decision changed, or its event record at restart (the same values): each
   * counter's new value, a PAUSE, the event number, the marks it sets and the rules waiting for
   * its outcome (`ref` names the event for them); expired approvals go. Called once the record
   * is written, with no await since `inspect`, so it replaces the state the decision was made
   * on. The values are absolute: committing one decision twice is harmless.
   */
  commit(session: string, at: number, change: Change, ref: EventRef = NO_REF): void {
    this.approvals.prune(at);
    const counted = change.counted ?? null;
    const pause = change.verdict === 'PAUSE' ? { at, by: change.boundary } : null;
    const events = change.eventNo;
    const budgeted = change.budgeted;
    if (events === undefined) {
      if (counted || pause || budgeted) this.#store.commit(session, { counted, pause, budgeted });
      return;
    }
    const { seq, kind, target } = ref;
    const marks = change.marks?.map((rule) => {
      return { rule, seq, eventNo: events, ts: at, what: `${kind} ${target}` };
    });
    const rules = change.onFailure;
    const pending =
      rules && rules.length > 0
        ? { rid: ref.rid ?? seq, seq, eventNo: events, ts: at, kind, target, rules }
        : undefined;
    this.#store.commit(session, { counted, pause, events, marks, pending, budgeted });
  }

  /**
   * How request `rid` of the session ended (its outcome or result record, written), or how far
   * a live flow got: a failure sets the marks its event was waiting for; bytes sent up count
   * toward volume rules and bytesUp budgets. True when a rule may fire now that did not before
   * (a mark set, or the session's bytes sent reach a volume limit or a budget): only then are
   * open flows judged again.
   */
  outcome(session: string, rid: number, { failed, bytesUp, ts }: Outcome): boolean {
    const { sequences, budgets } = this.#policy;
    if (sequences.length === 0 && budgets.length === 0) return false;
    const state = this.#store.session(session);
    const marks = failed && state ? failureMarks(state, rid) : undefined;
    const keep = bytesUp > 0 && this.#sentWindow > 0;
    const sent = keep ? { rid, ts, bytes: bytesUp, since: ts - this.#sentWindow } : undefined;
    // A request's bytes are its total so far: only what it adds counts toward budgets.
    const added = keep ? bytesUp - (state?.sent.get(rid)?.bytes ?? 0) : 0;
    const budgeted = bytesSteps(budgets, state ?? EMPTY, added, ts);
    if (marks === undefined && sent === undefined) return false;
    const settled = marks === undefined ? undefined : rid;
    this.#store.commit(session, { counted: null, pause: null, marks, settled, sent, budgeted });
    if (marks !== undefined) return true;
    const after = this.#store.session(session) ?? EMPTY;
    if (budgeted !== undefined && bytesReached(budgets, after, ts)) return true;
    return sequences.some((r) => r.type === 'volume' && after.sentBytes >= r.up);
  }

  /**
   * An operator's top-up (its record written): the session's limit of budget `name` rises by
   * `amount` in the window open at `at` (or one that opens then). Throws E_UNKNOWN_BUDGET.
   */
  topUp(session: string, name: string, amount: number, at: number): void {
    const b = this.budget(name);
    const step = topUpStep(b, this.#store.session(session) ?? EMPTY, amount, at);
    this.#store.commit(session, { counted: null, pause: null, budgeted: { [name]: step } });
  }

  /** The configured budget `name`; throws E_UNKNOWN_BUDGET naming those there are. */
  budget(name: string): Budget {
    const b = this.#policy.budgets.find((x) => x.name === name);
    if (b !== undefined) return b;
    const known = this.#policy.budgets.map((x) => x.name).join(', ') || 'none configured';
    throw new TrajgateError(
      'E_UNKNOWN_BUDGET',
      `no budget ${JSON.stringify(name)} in policy.budgets (budgets: ${known})`,
    );
  }

  /**
   * A failure no judged event is known for (a runner's result naming no call it asked about):
   * what failed cannot be known, so every rule that waits for a failure is marked, as of
   * record `seq`. True when one was (open flows are then judged again).
   */
  unlinkedFailure(session: string, seq: number, ts: number, what: string): boolean {
    const eventNo = this.#store.session(session)?.events ?? 0;
    const marks: Mark[] = [];
    for (const r of this.#policy.sequences)
      if (r.type === 'sequence' && r.onFailure)
        marks.push({ rule: r.name, seq, eventNo, ts, what });
    if (marks.length === 0) return false;
    this.#store.commit(session, { counted: null, pause: null, marks });
    return true;
  }

  /**
   * Unpauses; counts are kept unless `reset` (the operator said so explicitly); trajectory
   * marks (and bytes sent) go unless `keepMarks`, as approvals keep a resumed session from
   * pausing again on what was already reviewed.
   */
  resume(session: string, reset: boolean, keepMarks = false): void {
    this.#store.resume(session, reset, keepMarks);
  }

  /** An evict record: the session's counts, marks and pause are gone (it comes back at zero). */
  forget(session: string): void {
    this.#store.forget(session);
  }

  session(id: string): SessionState | undefined {
    return this.#store.session(id);
  }

  sessions(): IterableIterator<[string, SessionState]> {
    return this.#store.sessions();
  }
}

/** How long a request's bytes sent are kept: the longest volume rule's or bytesUp budget's window. */
function sentWindow(policy: GuardPolicy): number {
  return Math.max(volumeWindow(policy.sequences), bytesWindow(policy.budgets));
}
