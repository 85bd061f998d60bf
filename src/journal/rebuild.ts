import { isTrajgateError, TrajgateError } from '../errors.js';
import type { Guard } from '../guard/guard.js';
import type { JournalRecord, ResultRecord } from './records.js';

/**
 * Applies one journal record to the guard, restoring what the record decided rather than
 * judging the event again: counts, pauses, trajectory marks (from events, and from the outcomes
 * and results that report failures), approvals, deny patterns, revokes and resumes come back
 * exactly as they were, even if the policy changed since; an evict record forgets its session
 * (the rule that wrote it is not evaluated again: the record is the source of truth). Records of other types do not touch
 * guard state.
 */
export function applyRecord(guard: Guard, record: JournalRecord): void {
  const bad = (why: string) =>
    new TrajgateError('E_JOURNAL_CORRUPT', `${record.type} record ${why}`);
  switch (record.type) {
    case 'event':
      if (typeof record.session !== 'string') throw bad('has no "session"');
      if (record.counted !== undefined && !isCounts(record.counted))
        throw bad('has a bad "counted"');
      for (const field of ['marks', 'onFailure'] as const) {
        if (record[field] !== undefined && !isNames(record[field]))
          throw bad(`has a bad "${field}"`);
      }
      if (record.eventNo !== undefined && !isCount(record.eventNo))
        throw bad('has a bad "eventNo"');
      if (record.budgeted !== undefined && !isSteps(record.budgeted))
        throw bad('has a bad "budgeted"');
      // A flow judged again mid-flow: the bytes it had sent were counted before it was judged.
      if (isCount(record.sentUp) && isCount(record.rid)) {
        const ts = Date.parse(record.ts);
        guard.outcome(record.session, record.rid, { failed: false, bytesUp: record.sentUp, ts });
      }
      // What the live gateway installed once this line was written: the same call.
      guard.commit(record.session, Date.parse(record.ts), record, {
        seq: record.seq,
        rid: record.rid,
        kind: record.kind,
        target: record.target,
      });
      return;
    case 'outcome':
    case 'result': {
      if (typeof record.session !== 'string') return;
      if (record.type === 'result' && record.rid === null) {
        unlinkedResult(guard, record, record.seq, Date.parse(record.ts));
        return;
      }
      // How the request ended: a failure sets the trajectory marks its event waits for. One
      // that names no request (written before outcomes mattered, or by hand) changes nothing.
      if (!isCount(record.rid)) return;
      const outcome = record.type === 'outcome';
      guard.outcome(record.session, record.rid, {
        failed: outcome ? record.failed === true : record.ok === false,
        bytesUp: outcome && isCount(record.bytesUp) ? record.bytesUp : 0,
        ts: Date.parse(record.ts),
      });
      return;
    }
    case 'approve':
      restore('approval', () =>
        guard.approve({
          id: record.id ?? `a${record.seq}`,
          pattern: record.pattern,
          kind: record.kind,
          session: record.session,
          expiresAt: record.expiresAt === null ? null : Date.parse(record.expiresAt),
          by: record.by,
        }),
      );
      return;
    case 'deny-pattern':
      restore('deny pattern', () =>
        guard.addDeny({
          id: record.id ?? `d${record.seq}`,
          pattern: record.pattern,
          session: record.session,
          by: record.by,
        }),
      );
      return;
    case 'revoke':
      if (typeof record.id !== 'string') throw bad('has no "id"');
      // An approval that expired before its revoke was read back is gone already.
      guard.revoke(record.id);
      return;
    case 'resume':
      if (typeof record.session !== 'string') throw bad('has no "session"');
      // An approve-once (its rids named) forwards those and leaves the session paused.
      if (Array.isArray(record.once)) return;
      guard.resume(record.session, record.reset, record.keepMarks === true);
      return;
    case 'topup':
      if (typeof record.session !== 'string' || typeof record.budget !== 'string')
        throw bad('has no "session" or "budget"');
      if (!isCount(record.amount)) throw bad('has a bad "amount"');
      // A budget no longer configured limits nothing: its top-up is moot.
      if (guard.policy.budgets.some((b) => b.name === record.budget))
        guard.topUp(record.session, record.budget, record.amount, Date.parse(record.ts));
      return;
    case 'evict':
      if (typeof record.session !== 'string') throw bad('has no "session"');
      guard.forget(record.session);
      return;
  }
}

/**
 * A runner's result that names no call the session asked about (`unlinked`: journaled since
 * results are linked by id) counts as a failure of the session; true when it marked a rule.
 * Older results with a null `rid` and no `unlinked` change nothing, as they did live.
 */
export function unlinkedResult(
  guard: Guard,
  record: Pick<ResultRecord, 'session' | 'kind' | 'target' | 'unlinked'>,
  seq: number,
  ts: number,
): boolean {
  if (typeof record.unlinked !== 'string') return false;
  const what = `${record.kind} ${record.target} (a result of no known call)`;
  return guard.unlinkedFailure(record.session, seq, ts, what);
}

/** An approval or deny pattern read back; one that no longer parses is a corrupt journal. */
function restore(what: string, apply: () => unknown): void {
  try {
    apply();
  } catch (err) {
    const why = isTrajgateError(err) ? err.message : String(err);
    throw new TrajgateError('E_JOURNAL_CORRUPT', `${what} cannot be restored: ${why}`);
  }
}

function isCounts(value: unknown): value is Record<string, number> {
  return typeof value === 'object' && value !== null && Object.values(value).every(isCount);
}

function isCount(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

function isSteps(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).every(
    (s: unknown) =>
      typeof s === 'object' &&
      s !== null &&
      isCount((s as { start?: unknown }).start) &&
      isCount((s as { used?: unknown }).used) &&
      ['string', 'undefined'].includes(typeof (s as { host?: unknown }).host),
  );
}

function isNames(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((s) => typeof s === 'string');
}
