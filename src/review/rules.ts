import type { Admission } from '../action/live-tunnels.js';
import { TrajgateError } from '../errors.js';
import type { Approval } from '../guard/approvals.js';
import type { Deny } from '../guard/denies.js';
import { compileDeny } from '../guard/denies.js';
import type { Guard } from '../guard/guard.js';
import type { JournalWriter } from '../journal/writer.js';
import type { Review } from './review.js';

/** Closes open tunnels that `why` gives a reason for (action/live-tunnels); how many. */
export type TunnelCloser = (why: (admission: Admission) => string | null) => number;

/**
 * Operators' deny patterns and revokes, each journaled (and synced) before it applies, like
 * approvals. An open tunnel is only as good as what admitted it: one to a destination a new
 * deny refuses, or whose approval was revoked with nothing else approving it, closes.
 */
export class Rules {
  constructor(
    private readonly guard: Guard,
    private readonly journal: JournalWriter,
    private readonly review: Review,
    private readonly closeTunnels: TunnelCloser | null,
  ) {}

  /** Adds a deny pattern for a session (or all, `session` null). Throws E_PATTERN_INVALID. */
  block(spec: { pattern: string; session: string | null; by: string }): {
    deny: Deny;
    closed: number;
  } {
    compileDeny(spec);
    const seq = this.journal.append({ type: 'block', ...spec }, { sync: true });
    const deny = this.guard.block({ ...spec, id: `d${seq}` });
    if (spec.session !== null) this.review.answered(spec.session);
    const closed =
      this.closeTunnels?.((a) => {
        const lapsed = a.event && this.guard.lapsed(a.event, a.approved);
        return lapsed && lapsed !== 'unapproved'
          ? `${lapsed.deniedBy} (added after the tunnel opened)`
          : null;
      }) ?? 0;
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
    // A tunnel stays open only while something still approves it.
    const closed =
      'kind' in rule
        ? (this.closeTunnels?.((a) =>
            a.event && this.guard.lapsed(a.event, a.approved) === 'unapproved'
              ? `the approval ${id} that admitted it was revoked by ${by}`
              : null,
          ) ?? 0)
        : 0;
    return { revoked: rule, closed };
  }
}
