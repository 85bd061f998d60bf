import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { compileApproval } from '../guard/approvals.js';
import { OWN_BOUNDARIES } from '../guard/exfiltration.js';
import { BUDGET } from '../event/own-boundaries.js';
import type { Held } from '../action/hold.js';
import type { Guard } from '../guard/guard.js';
import type { Suggestion } from '../guard/suggest.js';
import type { PauseRecord } from '../journal/records.js';
import { suggestionFor } from './event-lookup.js';
import type { Review } from './review.js';
import type { Denials } from './pause-ends.js';
import type { HeldBrief, Sessions } from './sessions.js';

/**
 * What a link decides: approve once, approve the suggested pattern (and resume), resume with
 * the counts reset, deny, or top up the budget that paused (and resume).
 */
export type DecisionAction = 'once' | 'approve' | 'reset' | 'deny' | 'topup';
const ACTIONS: readonly string[] = [
  'once',
  'approve',
  'reset',
  'deny',
  'topup',
] satisfies DecisionAction[];

/** What a link's token says, signed: one action on one pause, while it lasts (notify.linkTtl). */
export interface Claims {
  readonly session: string;
  /** The pause's `pausedAt` (ms) and its trigger's seq: a later pause is another pause. */
  readonly pausedAt: number;
  readonly trigger: number;
  readonly action: DecisionAction;
  readonly expiresAt: number;
  /** The held requests (rids) the link was made for: all an approve-once forwards. */
  readonly rids: readonly number[];
  /** The gateway holding them, when several share the state (their rids are its own). */
  readonly at: string | null;
  /** A top-up's amount (the budget's own limit when the link was made); absent for the others. */
  readonly amount?: number;
}

export interface PauseLinks {
  /**
   * Null for a pause on a changed tool list: no one request of it may go on, only the list
   * pinned (or the session resumed).
   */
  readonly approveOnce: string | null;
  /** Null when the trigger has no approvable pattern. */
  readonly approvePattern: string | null;
  readonly approveReset: string | null;
  /** For a budget's pause: raise it by its own limit and resume (null, or absent, otherwise). */
  readonly topUp?: {
    readonly url: string;
    readonly budget: string;
    readonly amount: number;
  } | null;
  readonly deny: string;
  readonly suggestion: Suggestion | null;
  readonly expiresAt: string;
}

export interface Decided {
  readonly decided: DecisionAction;
  readonly session: string;
  /** Held requests let go: forwarded (once), judged again (approve) or answered 403 (deny). */
  readonly released: number;
  /** Approve once: the requests forwarded as approved, and those still held (session paused). */
  readonly once?: readonly HeldBrief[];
  readonly held?: readonly HeldBrief[];
  readonly approval?: Suggestion;
  readonly topUp?: { readonly budget: string; readonly amount: number };
  /** An approve-once whose requests were no longer held (timed out) resumed the session. */
  readonly instead?: 'resume';
}

const DOMAIN = 'trajgate decision link v1\n';

/** The rids of the requests a pause record holds (older records name none). */
const heldRids = (record: PauseRecord): number[] =>
  record.held.flatMap((h) => (typeof h.rid === 'number' ? [h.rid] : []));
const TOKEN = /^([A-Za-z0-9_-]{1,8192})\.([A-Za-z0-9_-]{43})$/;

/**
 * One-click decisions on a pause, for people who read the notification in chat. A token is
 * HMAC-SHA256-signed claims (session, the pause's pausedAt and trigger, the action, an expiry
 * at pausedAt + notify.linkTtl); it does that one action on that pause once, whenever it is
 * read while the pause lasts: resuming or denying the pause (by link, API or CLI) ends it, and
 * a later pause of the session is another. An approve-once link whose requests are no longer
 * held (the hold timed out, the agent was refused) resumes the session instead: it lets go
 * nothing as approved that its notification did not show.
 */
export class DecisionLinks {
  constructor(
    private readonly deps: {
      readonly key: () => Buffer;
      readonly guard: Guard;
      readonly review: Review;
      readonly sessions: Sessions;
      readonly denials: Denials;
      readonly linkTtl: () => number;
      readonly log: Logger;
    },
  ) {}

  /**
   * The links for a pause; `base` is the review page's URL. Approve once covers the requests
   * `rids` names: by default those the pause record holds (what its notification shows).
   */
  forPause(record: PauseRecord, base: URL, rids: readonly number[] = heldRids(record)): PauseLinks {
    const pausedAt = Date.parse(record.pausedAt);
    const expiresAt = pausedAt + this.deps.linkTtl();
    const claims = {
      session: record.session,
      pausedAt,
      trigger: record.trigger.seq,
      expiresAt,
      rids,
      at: this.deps.sessions.replica,
    };
    const link = (action: DecisionAction, amount = 0) =>
      new URL(`decide/${this.sign({ ...claims, action, amount })}`, base).href;
    const suggestion = this.suggestion(record);
    const once = record.toolChange === undefined;
    const budget = this.#budgetOf(record);
    return {
      approveOnce: once ? link('once') : null,
      approvePattern: suggestion ? link('approve') : null,
      approveReset: once ? link('reset') : null,
      topUp:
        budget === null
          ? null
          : { url: link('topup', budget.limit), budget: budget.name, amount: budget.limit },
      deny: link('deny'),
      suggestion,
      expiresAt: new Date(expiresAt).toISOString(),
    };
  }

  /** The configured budget a pause names (`PAUSE: budget`), or null. */
  #budgetOf(record: PauseRecord): { name: string; limit: number } | null {
    const name = record.trigger.boundary === BUDGET ? record.trigger.rule?.name : undefined;
    return this.deps.guard.policy.budgets.find((b) => b.name === name) ?? null;
  }

  sign(claims: Claims): string {
    const { session, pausedAt, trigger, action, expiresAt, rids, at, amount } = claims;
    // A top-up's amount rides as an eighth field; other links keep the seven they had.
    const fields = [session, pausedAt, trigger, action, expiresAt, rids, at];
    const json = JSON.stringify(action === 'topup' ? [...fields, amount ?? 0] : fields);
    const payload = Buffer.from(json, 'utf8').toString('base64url');
    return `${payload}.${this.#mac(payload).toString('base64url')}`;
  }

  /**
   * The claims of a token and the pause they name, while that pause is undecided and the link
   * unexpired; `instead` when an approve-once link would resume (its requests are gone). Throws
   * 403 E_LINK_INVALID (not signed by this gateway's key, or altered), 410 E_LINK_USED (the
   * pause was decided, saying how), 410 E_LINK_EXPIRED.
   */
  check(token: string): { claims: Claims; pause: PauseRecord; instead: 'resume' | null } {
    const claims = this.#verify(token);
    const { session } = claims;
    const pause = this.deps.review.pauseRecord(session);
    const live =
      this.deps.guard.session(session)?.pausedAt === claims.pausedAt &&
      pause?.trigger.seq === claims.trigger &&
      this.deps.denials.lastSeq(session) < claims.trigger;
    if (!live || pause === null) throw new TrajgateError('E_LINK_USED', this.#ended(claims));
    if (Date.now() >= claims.expiresAt) {
      throw new TrajgateError(
        'E_LINK_EXPIRED',
        `this link expired at ${new Date(claims.expiresAt).toISOString()} (notify.linkTtl after the pause); the session is still paused: decide on the review page`,
      );
    }
    return { claims, pause, instead: claims.action === 'once' ? this.#onceGone(claims) : null };
  }

  /** How the pause a link names ended, and what the session does now (E_LINK_USED's text). */
  #ended(claims: Claims): string {
    const { session } = claims;
    const end = this.deps.denials.lastEnd(session);
    const by = end === undefined || end.seq < claims.trigger ? undefined : end;
    const who = by?.by === 'link' ? 'a decision link' : by?.by;
    const how =
      by === undefined
        ? 'was already decided'
        : by.type === 'deny'
          ? `was denied by ${who} (its held requests were answered 403)`
          : `ended: the session was resumed by ${who}${by.reset ? ' with its counts reset' : ''}`;
    const now = this.deps.guard.session(session)?.pausedAt ?? null;
    const next =
      now === null
        ? 'the session runs: this link does nothing more'
        : now === claims.pausedAt
          ? `the session stays paused: resume it on the review page or with \`trajgate resume ${session}\``
          : `the session paused again at ${new Date(now).toISOString()}, another pause: decide on the review page or with that pause's links`;
    return `this pause of session ${JSON.stringify(session)} ${how}; ${next}`;
  }

  /**
   * Null while an approve-once link's requests are held here (or held by another gateway,
   * whose to release); 'resume' once none is held and none went as approved: it timed out or
   * its client left, so approving it once means resuming. Throws E_LINK_USED when one went.
   */
  #onceGone(claims: Claims): 'resume' | null {
    if (claims.at !== this.deps.sessions.replica) return null;
    if (this.held(claims.session).some((h) => this.covers(claims, h))) return null;
    if (claims.rids.some((rid) => this.deps.sessions.ended(rid) === 'once'))
      throw new TrajgateError(
        'E_LINK_USED',
        'the request this approve-once link names was already forwarded as approved: the session stays paused; resume it on the review page',
      );
    return 'resume';
  }

  /**
   * The approval the API suggests for the pause's trigger (`GET /api/events/:seq`), when it is
   * one the guard accepts and could cover (none covers trajgate's own files or a sentinel out of place).
   */
  suggestion(pause: PauseRecord): Suggestion | null {
    if (OWN_BOUNDARIES.has(pause.trigger.boundary ?? '')) return null;
    const workspace = this.deps.guard.policy.workspaceFor(pause.session);
    const suggestion = suggestionFor(pause.trigger, workspace);
    try {
      compileApproval(suggestion);
      return suggestion;
    } catch {
      return null;
    }
  }

  /** Requests the session holds here now (the confirm page lists what a decision lets go). */
  held(session: string): Held[] {
    return this.deps.sessions.held(session);
  }

  /** Whether an approve-once by `claims` forwards `held` (a request held here). */
  covers(claims: Claims, held: Held): boolean {
    return claims.at === this.deps.sessions.replica && claims.rids.includes(held.rid);
  }

  /** Does what the token says (journaled, `by: "link"`); throws as check does. */
  act(token: string): Decided {
    const { claims, pause, instead } = this.check(token);
    const { session, action } = claims;
    const by = 'link';
    const sessions = this.deps.sessions;
    let decided: Decided;
    try {
      if (instead === 'resume') {
        decided = { decided: action, ...sessions.resumeReport(session, { by }), session, instead };
      } else if (action === 'once') {
        // Rids of another gateway are its to release: the record goes out for it to act on.
        const { rids: once, at: onceAt } = claims;
        decided = {
          decided: action,
          ...sessions.resumeReport(session, { once, onceAt, by }),
          session,
        };
      } else if (action === 'topup') {
        const budget = pause.trigger.rule?.name ?? '';
        const amount = claims.amount ?? 0;
        const resumed = sessions.topUp(session, budget, amount, by);
        decided = {
          decided: action,
          session,
          released: resumed?.released ?? 0,
          topUp: { budget, amount },
        };
      } else if (action === 'deny') {
        decided = { decided: action, session, released: sessions.deny(session, { by }) };
      } else if (action === 'reset') {
        // What the person was shown goes as approved once; then a fresh start: counts zeroed,
        // the rest judged again (its next unapproved crossing is a REVIEW, not a pause).
        const { rids: once, at: onceAt } = claims;
        const approved = sessions.resumeReport(session, { once, onceAt, by });
        const released = sessions.resume(session, { reset: true, by });
        decided = { decided: action, session, released, once: approved.once };
      } else {
        const suggestion = this.suggestion(pause);
        if (suggestion === null)
          // Nothing the caller sent is wrong: this pause cannot be decided this way (409).
          throw new TrajgateError(
            'E_PATTERN_INVALID',
            'the trigger has no approvable pattern',
            [],
            { status: 409 },
          );
        sessions.approve({ ...suggestion, session, by });
        const released = sessions.resume(session, { by });
        decided = { decided: action, session, released, approval: suggestion };
      }
    } catch (err) {
      if (isTrajgateError(err) && err.code === 'E_JOURNAL_WRITE')
        throw new TrajgateError(
          'E_JOURNAL_WRITE',
          `${err.message}; nothing was decided, try again`,
        );
      throw err;
    }
    this.deps.log.info({ ...decided }, 'decision link used');
    return decided;
  }

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.deps.key()).update(DOMAIN).update(payload).digest();
  }

  #verify(token: string): Claims {
    const invalid = () =>
      new TrajgateError(
        'E_LINK_INVALID',
        'this decision link is not valid (altered, or signed with another key): nothing was done',
      );
    const m = TOKEN.exec(token);
    if (!m) throw invalid();
    const payload = m[1] as string;
    // Compared as text (both 43 characters), in constant time: base64url decoding ignores the
    // last character's low bits, so only the text itself says the link is the one we made.
    const given = Buffer.from(m[2] as string, 'latin1');
    const expected = Buffer.from(this.#mac(payload).toString('base64url'), 'latin1');
    if (!timingSafeEqual(given, expected)) throw invalid();
    let fields: unknown;
    try {
      fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    // Five fields: a link made before links named their requests (it names none); eight: a top-up.
    if (!Array.isArray(fields) || ![5, 7, 8].includes(fields.length)) throw invalid();
    const [session, pausedAt, trigger, action, expiresAt, rids = [], at = null, amount = 0] =
      fields as unknown[];
    if (
      typeof session !== 'string' ||
      !Number.isSafeInteger(pausedAt) ||
      !Number.isSafeInteger(trigger) ||
      typeof action !== 'string' ||
      !ACTIONS.includes(action) ||
      !Number.isSafeInteger(expiresAt) ||
      !Array.isArray(rids) ||
      !rids.every((n) => Number.isSafeInteger(n) && n > 0) ||
      (at !== null && typeof at !== 'string') ||
      !Number.isSafeInteger(amount) ||
      (action === 'topup') !== (amount as number) > 0
    )
      throw invalid();
    return {
      session,
      pausedAt: pausedAt as number,
      trigger: trigger as number,
      action: action as DecisionAction,
      expiresAt: expiresAt as number,
      rids: rids as number[],
      at: at as string | null,
      amount: amount as number,
    };
  }
}
