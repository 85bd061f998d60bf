import { parseDuration } from '../config/formats.js';
import type { Slice } from '../config/parts.js';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { describeValue } from '../event/validate.js';
import type { Approval } from '../guard/approvals.js';
import type { Deny } from '../guard/denies.js';
import type { Guard } from '../guard/guard.js';
import type { SessionIndex } from '../journal/session-index.js';
import { eventBySeq, suggestionFor } from './event-lookup.js';
import type { Sessions } from './sessions.js';
import type { ApprovalView, DenyView, EventAnswer } from '../wire.js';

/** Approvals and deny patterns as the API, CLI and page show them (../wire.d.ts). */
export type { ApprovalView, DenyView };

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const approvalView = (a: Approval): ApprovalView => ({
  id: a.id,
  pattern: a.pattern,
  kind: a.kind,
  session: a.session,
  expiresAt: iso(a.expiresAt),
  origin: a.origin,
  source: a.source,
  by: a.by,
});

export const denyView = (d: Deny): DenyView => ({
  id: d.id,
  pattern: d.pattern,
  session: d.session,
  origin: d.origin,
  source: d.source,
  by: d.by,
});

/** What the rules' routes read of the config at each call (part of the admin API's slice). */
type RulesConfig = Slice<{ journal: ['path']; kinds: true }>;

/** The admin API's approvals, deny patterns and event look-ups, apart from HTTP. */
export class ApiRules {
  constructor(
    private readonly config: RulesConfig,
    private readonly guard: Guard,
    private readonly sessions: Sessions,
    private readonly index: SessionIndex,
  ) {}

  /** One session's approval (`id`), or a global one (`id` null, already checked). */
  approve(id: string | null, body: Record<string, unknown>, by: string): ApprovalView {
    const pattern = patternField(body);
    const kind = body.kind ?? 'network';
    if (typeof kind !== 'string' || !this.config.kinds.has(kind)) {
      throw new TrajgateError(
        'E_BAD_FIELD',
        `field "kind" must be one of ${[...this.config.kinds].join(', ')}, got ${describeValue(kind)}`,
      );
    }
    let expiresAt: number | null = null;
    if (body.ttl !== undefined) {
      const ms = typeof body.ttl === 'string' ? parseDuration(body.ttl) : undefined;
      if (ms === undefined || ms <= 0) {
        throw new TrajgateError(
          'E_BAD_FIELD',
          `field "ttl" must be a duration like 30m or 1h, got ${describeValue(body.ttl)}`,
        );
      }
      expiresAt = Date.now() + ms;
    }
    return approvalView(
      operate(() => this.sessions.approve({ pattern, kind, session: id, expiresAt, by })),
    );
  }

  approvals(): ApprovalView[] {
    return this.guard.approvals.all(Date.now()).map(approvalView);
  }

  denies(): DenyView[] {
    return this.guard.denies.all(null, true).map(denyView);
  }

  /** A deny pattern for one session (`id`, already checked) or all (`id` null). */
  addDeny(id: string | null, body: Record<string, unknown>, by: string) {
    const pattern = patternField(body);
    const { deny, closed } = operate(() =>
      this.sessions.rules.addDeny({ pattern, session: id, by }),
    );
    return { deny: denyView(deny), closed };
  }

  /** DELETE /api/approvals/:id (`approval`) or /api/denies/:id (`deny`). */
  revoke(what: 'approval' | 'deny', id: string, by: string) {
    const known =
      what === 'approval' ? this.guard.approvals.byId(id, Date.now()) : this.guard.denies.byId(id);
    if (known === undefined) {
      const list = what === 'approval' ? '/api/approvals' : '/api/denies';
      const name = what === 'approval' ? 'approval' : 'deny pattern';
      throw new TrajgateError(
        'E_UNKNOWN_APPROVAL',
        `no ${name} with id ${JSON.stringify(id)} (revoked, expired or never made): GET ${list} lists the ids`,
      );
    }
    const { revoked, closed } = operate(() => this.sessions.rules.revoke(id, by));
    return 'kind' in revoked
      ? { revoked: approvalView(revoked), closed }
      : { revoked: denyView(revoked as Deny) };
  }

  /** GET /api/events/:seq: the event and the approval that would fit it. */
  async event(text: string): Promise<EventAnswer> {
    const seq = Number(text);
    if (!Number.isSafeInteger(seq) || seq < 1) {
      throw new TrajgateError(
        'E_BAD_FIELD',
        `an event seq is a whole number from 1, got ${JSON.stringify(text)}`,
      );
    }
    const event = await eventBySeq(this.config.journal.path, this.index, seq);
    const workspace = this.guard.policy.workspaceFor(event.session);
    return { event, suggestion: suggestionFor(event, workspace) };
  }
}

function patternField(body: Record<string, unknown>): string {
  const pattern = body.pattern;
  if (typeof pattern !== 'string' || pattern.trim() === '') {
    throw new TrajgateError(
      'E_BAD_FIELD',
      `field "pattern" must be a non-empty string, got ${describeValue(pattern)}`,
    );
  }
  return pattern;
}

/**
 * Runs an operator action. Its typed failures are answered as they are (nothing changed by any);
 * one the journal could not record did not happen: 503, with the reason.
 */
export function operate<T>(action: () => T): T {
  try {
    return action();
  } catch (err) {
    if (!isTrajgateError(err) || err.code !== 'E_JOURNAL_WRITE') throw err;
    throw new TrajgateError('E_JOURNAL_WRITE', `${err.message}; nothing was changed, try again`);
  }
}
