import { TrajgateError } from '../errors.js';
import type { Approval } from '../guard/approvals.js';
import type { Deny } from '../guard/denies.js';
import { compileDeny } from '../guard/denies.js';
import type { Guard } from '../guard/guard.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from './review.js';

/**
 * Closes the live flows whose basis no longer holds (pipeline/flow-basis), each journaled with
 * its reason and `cause`; how many.
 */
export type FlowJudge = (cause: string) => number;

/**
 * Operators' deny patterns and revokes, each journaled (and synced) before it applies, like
 * approvals. A live flow is only as good as what admitted it: one to a destination a new deny
 * refuses, or whose approval was revoked with nothing else approving it, closes.
 */
export class Rules {
  constructor(
    private readonly guard: Guard,
    private readonly journal: JournalWriter,
    private readonly review: Review,
    private readonly rejudge: FlowJudge | null,
    private readonly replica: string | null,
  ) {}

  /** Adds a deny pattern for a session (or all, `session` null). Throws E_PATTERN_INVALID. */
  addDeny(spec: { pattern: string; session: string | null; by: string }): {
    deny: Deny;
    closed: number;
  } {
    compileDeny(spec);
    const { id, field } = ruleId('d', this.journal.lastSeq + 1, this.replica);
    this.journal.append({ type: 'deny-pattern', ...field, ...spec }, { sync: true });
    const deny = this.guard.addDeny({ ...spec, id });
    if (spec.session !== null) this.review.answered(spec.session);
    const closed = this.closeDenied();
    return { deny, closed };
  }

  /**
   * Removes an operator's approval or deny pattern by id. Throws E_UNKNOWN_APPROVAL (no such
   * id, or expired) or E_CONFIG_APPROVAL (a config entry: only editing the config removes it).
   */
  revoke(id: string, by: string): { revoked: Approval | Deny; closed: number } {
    const rule = this.guard.approvals.byId(id, Date.now()) ?? this.guard.denies.byId(id);
    if (rule === undefined) {
      throw new TrajgateError(
        'E_UNKNOWN_APPROVAL',
        `no approval or deny pattern with id ${JSON.stringify(id)} (expired, revoked, or never made): GET /api/approvals and /api/denies list the ids`,
      );
    }
    if (rule.origin === 'config') {
      throw new TrajgateError(
        'E_CONFIG_APPROVAL',
        `${id} (${JSON.stringify(rule.pattern)}) comes from the config (${rule.source}): edit the config to remove it; nothing was changed`,
      );
    }
    const kind = 'kind' in rule ? rule.kind : 'network';
    this.journal.append(
      { type: 'revoke', id, pattern: rule.pattern, kind, session: rule.session, by },
      { sync: true },
    );
    this.guard.revoke(id);
    const closed = 'kind' in rule ? this.closeUnapproved(id, by) : 0;
    return { revoked: rule, closed };
  }

  /** Closes the live flows a deny pattern now refuses (one added here or elsewhere). */
  closeDenied(): number {
    return this.rejudge?.('a deny pattern was added after it was admitted') ?? 0;
  }

  /** A flow goes on only while something still approves it (after approval `id` went). */
  closeUnapproved(id: string, by: string): number {
    return this.rejudge?.(`the approval ${id} was revoked by ${by}`) ?? 0;
  }
}

/**
 * An operator's approval (`a`) or deny pattern (`d`) id, from its record's seq; with several
 * gateways sharing the state, the replica's name keeps ids apart and the record carries it.
 */
export function ruleId(
  kind: 'a' | 'd',
  seq: number,
  replica: string | null,
): { id: string; field: { id?: string } } {
  if (replica === null) return { id: `${kind}${seq}`, field: {} };
  const id = `${kind}${seq}.${replica}`;
  return { id, field: { id } };
}
