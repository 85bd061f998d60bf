import type { Within } from '../config/sequences-schema.js';
import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import type { Matcher, Sequence } from './compiled-policy.js';
import type { Decision, Verdict } from './decision.js';
import { RANK } from './decision.js';
import { boundaryOfKey, matchesTargets } from './policy.js';
import type { Mark, SessionState } from './store.js';

/**
 * The pure matching of trajectory rules (`policy.sequences`, as compiled-policy.ts has them). A
 * rule judges an event by what it is and by what the guard decided of it (`refused`,
 * `crossing`, `approved`); what it remembers between events (marks, pending failures, bytes
 * sent) is in SessionState.
 */

/** The largest volume window (ms): how long bytes sent are remembered; 0 without volume rules. */
export function volumeWindow(rules: readonly Sequence[]): number {
  let ms = 0;
  for (const r of rules) if (r.type === 'volume' && r.windowMs > ms) ms = r.windowMs;
  return ms;
}

/**
 * Whether `event` matches: `verdict` is the one decided of it, `counting` the counting
 * decision (approval and crossings); `failed`, whether it counts as a failure.
 */
function matches(
  m: Matcher,
  event: Event,
  verdict: Verdict,
  counting: Decision,
  failed: boolean,
): boolean {
  if (m.kinds !== null && !m.kinds.has(event.kind)) return false;
  if (m.failed !== null && m.failed !== failed) return false;
  if (m.approved !== null && m.approved !== counting.approved) return false;
  if (m.refused !== null && m.refused !== (verdict !== 'ALLOW')) return false;
  if (m.crossing !== null && !crossed(counting, m.crossing)) return false;
  return m.targets === null || matchesTargets(m.targets, event);
}

/** Counted against `boundary` (an approved event never is). */
function crossed(d: Decision, boundary: string): boolean {
  if (d.counted === null || d.approved) return false;
  for (const key in d.counted) if (boundaryOfKey(key) === boundary) return true;
  return false;
}

function live(w: Within | null, mark: Mark, ts: number, eventNo: number): boolean {
  if (w === null) return true;
  return 'events' in w ? eventNo - mark.eventNo <= w.events : ts - mark.ts <= w.ms;
}

/** Bytes sent up at or after `since` (entries are in outcome order, the old ones first). */
function sentSince(state: SessionState, since: number): number {
  let bytes = state.sentBytes;
  for (const s of state.sent.values()) {
    if (s.ts >= since) break;
    bytes -= s.bytes;
  }
  return bytes;
}

/**
 * The decision with the trajectory rules applied: the most severe of the counting verdict and
 * every rule that fires; a rule at least as severe as the count names it. It carries the
 * session's new event number and the rules this event marks (now, or on a failed outcome).
 * One object shape whatever fired, so that what reads decisions stays monomorphic.
 */
export function applySequences(
  rules: readonly Sequence[],
  state: SessionState,
  event: Event,
  counting: Decision,
): Decision {
  const eventNo = state.events + 1;
  const failed = event.failed === true;
  const verdict0 = counting.verdict;
  let fired: Sequence | null = null;
  let firedMark: Mark | null = null;
  let firedBytes = 0;
  for (const rule of rules) {
    if (fired !== null && RANK[rule.verdict] <= RANK[fired.verdict]) continue;
    let mark: Mark | null = null;
    let bytes = 0;
    if (rule.type === 'sequence') {
      if (state.marks.size === 0) continue;
      mark = state.marks.get(rule.name) ?? null;
      if (mark === null || !live(rule.within, mark, event.ts, eventNo)) continue;
      if (!matches(rule.then, event, verdict0, counting, failed)) continue;
    } else {
      if (state.sentBytes < rule.up) continue;
      bytes = sentSince(state, event.ts - rule.windowMs);
      if (bytes < rule.up) continue;
      if (!matches(rule.then, event, verdict0, counting, failed)) continue;
    }
    fired = rule;
    firedMark = mark;
    firedBytes = bytes;
  }
  const named = fired !== null && RANK[fired.verdict] >= RANK[verdict0] ? fired : null;
  const verdict = named === null ? verdict0 : named.verdict;
  // Rule lists by bitmask, shared: with a rule that waits for failures every event keeps one.
  let marks = 0;
  let onFailure = 0;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as Sequence;
    if (rule.type !== 'sequence') continue;
    if (matches(rule.after, event, verdict, counting, failed)) marks |= 1 << i;
    else if (rule.onFailure && !failed && matches(rule.after, event, verdict, counting, true))
      onFailure |= 1 << i;
  }
  return {
    verdict,
    boundary: named === null ? counting.boundary : named.name,
    count: counting.count,
    reason:
      named === null ? counting.reason : ruleReason(named, firedMark, firedBytes, event, counting),
    approved: counting.approved,
    approvedBy: counting.approvedBy,
    counted: counting.counted,
    deniedBy: counting.deniedBy,
    rule:
      named === null
        ? undefined
        : firedMark === null
          ? { name: named.name }
          : { name: named.name, after: firedMark.seq },
    marks: namesOf(rules, marks),
    onFailure: namesOf(rules, onFailure),
    eventNo,
  };
}

/** The lists namesOf made for the rules it saw last (a policy's rules are one array). */
let namedRules: readonly Sequence[] | null = null;
let nameLists = new Map<number, readonly string[]>();

/** The names of the rules whose bits are set (shared, frozen), or undefined for none. */
function namesOf(rules: readonly Sequence[], bits: number): readonly string[] | undefined {
  if (bits === 0) return undefined;
  if (rules !== namedRules) {
    namedRules = rules;
    nameLists = new Map();
  }
  let names = nameLists.get(bits);
  if (names === undefined) {
    names = Object.freeze(rules.filter((_, i) => (bits & (1 << i)) !== 0).map((r) => r.name));
    nameLists.set(bits, names);
  }
  return names;
}

/** An event the rules do not judge (an operator let it through): only its number. */
export function numbered(d: Decision, eventNo: number): Decision {
  return {
    verdict: d.verdict,
    boundary: d.boundary,
    count: d.count,
    reason: d.reason,
    approved: d.approved,
    approvedBy: d.approvedBy,
    counted: d.counted,
    deniedBy: d.deniedBy,
    rule: undefined,
    marks: undefined,
    onFailure: undefined,
    eventNo,
  };
}

/** `secret-then-egress: network to example.com:443 after #41 read ~/.ssh/id (within 1h)`. */
function ruleReason(
  rule: Sequence,
  mark: Mark | null,
  bytes: number,
  event: Event,
  counting: Decision,
): string {
  const what =
    event.subject.type === 'network'
      ? `${event.kind} to ${destination(event.subject)}`
      : `${event.kind} ${event.target}`;
  const why =
    rule.type === 'volume'
      ? `after ${formatBytes(bytes)} sent up within ${rule.windowText} (limit ${rule.upText})`
      : `after #${mark?.seq} ${mark?.what}${rule.within === null ? '' : ` (within ${rule.within.text})`}`;
  const also = counting.verdict === 'ALLOW' ? '' : `; also ${counting.verdict}: ${counting.reason}`;
  return `${rule.name}: ${what} ${why}${also}`;
}

function formatBytes(n: number): string {
  for (const [unit, size] of [
    ['GB', 1e9],
    ['MB', 1e6],
    ['KB', 1e3],
  ] as const) {
    if (n >= size) return `${Number((n / size).toFixed(1))} ${unit}`;
  }
  return `${n} B`;
}

/** The marks a failed outcome of `pending` installs: none older than the rule's current one. */
export function failureMarks(state: SessionState, rid: number): Mark[] | undefined {
  const p = state.pending.find(rid);
  if (p === undefined) return undefined;
  const what = `${p.kind} ${p.target}`;
  const marks: Mark[] = [];
  for (const rule of p.rules) {
    const current = state.marks.get(rule);
    if (current !== undefined && current.eventNo > p.eventNo) continue;
    marks.push({ rule, seq: p.seq, eventNo: p.eventNo, ts: p.ts, what });
  }
  return marks;
}
