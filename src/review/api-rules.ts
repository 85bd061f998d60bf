import { parseDuration } from '../config/formats.js';
import type { Config } from '../config/load.js';
import { isTrajgateError } from '../errors.js';
import { describe } from '../event/validate.js';
import type { Approval } from '../guard/approvals.js';
import type { Deny } from '../guard/denies.js';
import type { Guard } from '../guard/guard.js';
import type { Suggestion } from '../guard/suggest.js';
import type { EventRecord } from '../journal/records.js';
import type { SessionIndex } from '../journal/session-index.js';
import { eventBySeq, suggestionFor } from './event-lookup.js';
import { ApiError } from '../http/json.js';
import type { Sessions } from './sessions.js';

/** An approval as the API, CLI and page show it. */
export interface ApprovalView {
  /** `a<seq>` (an operator's: revocable), `c<n>` (a config entry: edit the config). */
  readonly id: string;
  readonly pattern: string;
  readonly kind: string;
  readonly session: string | null;
  readonly expiresAt: string | null;
  readonly origin: 'config' | 'operator';
  /** `network.allow`, `agents.<id>.allow`, `roles.<name>.allow` or `operator`. */
  readonly source: string;
  /** The admin token's name that approved it; null for config entries. */
  readonly by: string | null;
}

/** A deny pattern: `d<seq>` (an operator's), `cd<n>` (`network.deny`). */
export type DenyView = Pick<Deny, 'id' | 'pattern' | 'session' | 'origin' | 'source' | 'by'>;

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

/** The admin API's approvals, deny patterns and event look-ups, apart from HTTP. */
export class ApiRules {
  constructor(
    private readonly config: Config,
    private readonly guard: Guard,
    private readonly sessions: Sessions,
    private readonly index: SessionIndex,
  ) {}

  /** One session's approval (`id`), or a global one (`id` null, already checked). */
  approve(id: string | null, body: Record<string, unknown>, by: string): ApprovalView {
    const pattern = patternField(body);
    const kind = body.kind ?? 'network';
    if (typeof kind !== 'string' || !this.config.kinds.has(kind)) {
      throw new ApiError(
        400,
        'E_BAD_FIELD',
        `field "kind" must be one of ${[...this.config.kinds].join(', ')}, got ${describe(kind)}`,
      );
    }
    let expiresAt: number | null = null;
    if (body.ttl !== undefined) {
      const ms = typeof body.ttl === 'string' ? parseDuration(body.ttl) : undefined;
      if (ms === undefined || ms <= 0) {
        throw new ApiError(
          400,
          'E_BAD_FIELD',
          `field "ttl" must be a duration like 30m or 1h, got ${describe(body.ttl)}`,
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
  block(id: string | null, body: Record<string, unknown>, by: string) {
    const pattern = patternField(body);
    const { deny, closed } = operate(() => this.sessions.rules.block({ pattern, session: id, by }));
    return { deny: denyView(deny), closed };
  }

  /** DELETE /api/approvals/:id (`approval`) or /api/denies/:id (`deny`). */
  revoke(what: 'approval' | 'deny', id: string, by: string) {
    const known =
      what === 'approval' ? this.guard.approvals.byId(id, Date.now()) : this.guard.denies.byId(id);
    if (known === undefined) {
      const list = what === 'approval' ? '/api/approvals' : '/api/denies';
      const name = what === 'approval' ? 'approval' : 'deny pattern';
      throw new ApiError(
        404,
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
  async event(text: string): Promise<{ event: EventRecord; suggestion: Suggestion }> {
    const seq = Number(text);
    if (!Number.isSafeInteger(seq) || seq < 1) {
      throw new ApiError(
        400,
        'E_BAD_FIELD',
        `an event seq is a whole number from 1, got ${JSON.stringify(text)}`,
      );
    }
    const event = await eventBySeq(this.config.journal, this.index, seq);
    const workspace = this.guard.policy.workspaceFor(event.session);
    return { event, suggestion: suggestionFor(event, workspace) };
  }
}

function patternField(body: Record<string, unknown>): string {
  const pattern = body.pattern;
  if (typeof pattern !== 'string' || pattern.trim() === '') {
    throw new ApiError(
      400,
      'E_BAD_FIELD',
      `field "pattern" must be a non-empty string, got ${describe(pattern)}`,
    );
  }
  return pattern;
}

/** Runs an operator action, its typed failures as API errors (nothing changed by any). */
function operate<T>(action: () => T): T {
  try {
    return action();
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    switch (err.code) {
      case 'E_PATTERN_INVALID':
        throw new ApiError(400, err.code, err.message);
      case 'E_UNKNOWN_APPROVAL':
        throw new ApiError(404, err.code, err.message);
      case 'E_CONFIG_APPROVAL':
        throw new ApiError(409, err.code, err.message);
      case 'E_JOURNAL_WRITE':
        throw new ApiError(503, err.code, `${err.message}; nothing was changed, try again`);
      default:
        throw err;
    }
  }
}
