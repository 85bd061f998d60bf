import { TrajgateError } from '../errors.js';
import { PendingRing } from './pending.js';
import type { Live, Mark, Pending, SessionState } from './store.js';
import { fresh } from './store.js';

/** The version of a session's state as written to the shared store and journal snapshots. */
export const STATE_VERSION = 1;

/** A session's state as JSON: what `decodeSession` reads back. */
export interface EncodedSession {
  readonly format: number;
  readonly counts: Record<string, number>;
  readonly pausedAt: number | null;
  readonly pausedBy: string | null;
  readonly events: number;
  readonly marks: Mark[];
  readonly pending: Pending[];
  /** [request id, ts, bytes] in the order outcomes came. */
  readonly sent: [number, number, number][];
  /** [budget name, window start, used, topped up, hosts or null]; absent before budgets. */
  readonly budgets?: [string, number, number, number, string[] | null][];
}

export function encodeSession(state: SessionState): EncodedSession {
  return {
    format: STATE_VERSION,
    counts: Object.fromEntries(state.counts),
    pausedAt: state.pausedAt,
    pausedBy: state.pausedBy,
    events: state.events,
    marks: [...state.marks.values()],
    pending: state.pending.values(),
    sent: [...state.sent].map(([rid, s]) => [rid, s.ts, s.bytes]),
    budgets: [...state.budgets].map(([name, u]) => [
      name,
      u.start,
      u.used,
      u.extra,
      u.hosts === null ? null : [...u.hosts],
    ]),
  };
}

/**
 * A session's state read back (the shared store's, a snapshot's). Anything that does not have
 * the shape `encodeSession` writes is E_STORE_CORRUPT naming `where` (the key) and the field:
 * deciding on a state that was not ours would be deciding on nothing.
 */
export function decodeSession(value: unknown, where: string): Live {
  const bad = (why: string) => new TrajgateError('E_STORE_CORRUPT', `${where}: ${why}`);
  if (!isObject(value)) throw bad('not a session state object');
  if (value.format !== STATE_VERSION) {
    throw bad(`state format ${JSON.stringify(value.format)} is not ${STATE_VERSION}`);
  }
  const state = fresh();
  if (!isObject(value.counts)) throw bad('"counts" is not an object');
  for (const [key, n] of Object.entries(value.counts)) {
    if (!isCount(n)) throw bad(`"counts.${key}" is not a count`);
    state.counts.set(key, n);
  }
  if (value.pausedAt !== null && !isCount(value.pausedAt)) throw bad('"pausedAt" is not a time');
  if (value.pausedBy !== null && typeof value.pausedBy !== 'string') {
    throw bad('"pausedBy" is not a string');
  }
  state.pausedAt = value.pausedAt as number | null;
  state.pausedBy = value.pausedBy as string | null;
  if (!isCount(value.events)) throw bad('"events" is not a count');
  state.events = value.events;
  for (const mark of list(value.marks, 'marks', bad)) {
    if (!isMark(mark)) throw bad('"marks" holds a malformed mark');
    state.marks.set(mark.rule, mark);
  }
  const pending = list(value.pending, 'pending', bad);
  if (pending.length > 0) {
    const ring = new PendingRing();
    for (const p of pending) {
      if (!isPending(p)) throw bad('"pending" holds a malformed event');
      ring.push(p);
    }
    state.pending = ring;
  }
  for (const entry of list(value.sent, 'sent', bad)) {
    if (!Array.isArray(entry) || entry.length !== 3 || !entry.every(isCount)) {
      throw bad('"sent" holds a malformed entry');
    }
    const [rid, ts, bytes] = entry as [number, number, number];
    state.sent.set(rid, { ts, bytes });
    state.sentBytes += bytes;
  }
  for (const entry of value.budgets === undefined ? [] : list(value.budgets, 'budgets', bad)) {
    if (!isBudget(entry)) throw bad('"budgets" holds a malformed entry');
    const [name, start, used, extra, hosts] = entry;
    state.budgets.set(name, { start, used, extra, hosts: hosts === null ? null : new Set(hosts) });
  }
  return state;
}

function list(value: unknown, field: string, bad: (why: string) => Error): unknown[] {
  if (!Array.isArray(value)) throw bad(`"${field}" is not a list`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

function isBudget(e: unknown): e is NonNullable<EncodedSession['budgets']>[number] {
  return (
    Array.isArray(e) &&
    e.length === 5 &&
    typeof e[0] === 'string' &&
    isCount(e[1]) &&
    isCount(e[2]) &&
    isCount(e[3]) &&
    (e[4] === null || (Array.isArray(e[4]) && e[4].every((h) => typeof h === 'string')))
  );
}

function isMark(m: unknown): m is Mark {
  return (
    isObject(m) &&
    typeof m.rule === 'string' &&
    typeof m.what === 'string' &&
    isCount(m.seq) &&
    isCount(m.eventNo) &&
    isCount(m.ts)
  );
}

function isPending(p: unknown): p is Pending {
  return (
    isObject(p) &&
    isCount(p.rid) &&
    isCount(p.seq) &&
    isCount(p.eventNo) &&
    isCount(p.ts) &&
    typeof p.kind === 'string' &&
    typeof p.target === 'string' &&
    Array.isArray(p.rules) &&
    p.rules.every((r) => typeof r === 'string')
  );
}
