import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { isTrajgateError, TrajgateError } from '../errors.js';
import { compileApproval } from '../guard/approvals.js';
import { TRAJGATE_FILES } from '../guard/protected.js';
import type { Held } from '../action/hold.js';
import type { Guard } from '../guard/guard.js';
import type { Suggestion } from '../guard/suggest.js';
import type { JournalRecord, PauseRecord, Unstamped } from '../journal/records.js';
import { suggestionFor } from './event-lookup.js';
import type { Review } from './review.js';
import type { HeldBrief, Sessions } from './sessions.js';

/** What a link decides: approve once, approve the suggested pattern (and resume), deny. */
export type DecisionAction = 'once' | 'approve' | 'deny';
const ACTIONS: readonly string[] = ['once', 'approve', 'deny'] satisfies DecisionAction[];

/** What a link's token says, signed: one action on one pause, until the hold ends. */
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
}

export interface PauseLinks {
  readonly approveOnce: string;
  /** Null when the trigger has no approvable pattern. */
  readonly approvePattern: string | null;
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
}

/** The seq of each session's last `deny` record: a denial decides the pause before it. */
export class Denials {
  readonly #last = new Map<string, number>();

  /** Every record of the journal, read back or written (openJournal's onAppend). */
  observe(record: Unstamped<JournalRecord>, seq: number): void {
    if (record.type === 'deny') this.#last.set(record.session, seq);
  }

  lastSeq(session: string): number {
    return this.#last.get(session) ?? 0;
  }

  /** Per session, its last deny's seq (a journal snapshot). */
  entries(): [string, number][] {
    return [...this.#last];
  }

  restore(entries: readonly (readonly [string, number])[]): void {
    for (const [session, seq] of entries) this.#last.set(session, seq);
  }
}

const DOMAIN = 'trajgate decision link v1\n';

/** The rids of the requests a pause record holds (older records name none). */
const heldRids = (record: PauseRecord): number[] =>
  record.held.flatMap((h) => (typeof h.rid === 'number' ? [h.rid] : []));
const TOKEN = /^([A-Za-z0-9_-]{1,8192})\.([A-Za-z0-9_-]{43})$/;

/**
 * One-click decisions on a pause, for people who read the notification in chat. A token is
 * HMAC-SHA256-signed claims (session, the pause's pausedAt and trigger, the action, an expiry
 * at pausedAt + policy.holdTimeout); it does that one action on that pause once: resuming or
 * denying the pause (by link, API or CLI) ends it, and a later pause of the session is another.
 */
export class DecisionLinks {
  constructor(
    private readonly deps: {
      readonly key: () => Buffer;
      readonly guard: Guard;
      readonly review: Review;
      readonly sessions: Sessions;
      readonly denials: Denials;
      readonly holdTimeout: () => number;
      readonly log: Logger;
    },
  ) {}

  /**
   * The links for a pause; `base` is the review page's URL. Approve once covers the requests
   * `rids` names: by default those the pause record holds (what its notification shows).
   */
  forPause(record: PauseRecord, base: URL, rids: readonly number[] = heldRids(record)): PauseLinks {
    const pausedAt = Date.parse(record.pausedAt);
    const expiresAt = pausedAt + this.deps.holdTimeout();
    const claims = {
      session: record.session,
      pausedAt,
      trigger: record.trigger.seq,
      expiresAt,
      rids,
      at: this.deps.sessions.replica,
    };
    const link = (action: DecisionAction) =>
      new URL(`decide/${this.sign({ ...claims, action })}`, base).href;
    const suggestion = this.suggestion(record);
    return {
      approveOnce: link('once'),
      approvePattern: suggestion ? link('approve') : null,
      deny: link('deny'),
      suggestion,
      expiresAt: new Date(expiresAt).toISOString(),
    };
  }

  sign(claims: Claims): string {
    const { session, pausedAt, trigger, action, expiresAt, rids, at } = claims;
    const json = JSON.stringify([session, pausedAt, trigger, action, expiresAt, rids, at]);
    const payload = Buffer.from(json, 'utf8').toString('base64url');
    return `${payload}.${this.#mac(payload).toString('base64url')}`;
  }

  /**
   * The claims of a token and the pause they name, while that pause is undecided and the link
   * unexpired. Throws 403 E_LINK_INVALID (not signed by this gateway's key, or
   * altered), 410 E_LINK_USED (the pause was decided), 410 E_LINK_EXPIRED.
   */
  check(token: string): { claims: Claims; pause: PauseRecord } {
    const claims = this.#verify(token);
    const { session } = claims;
    const pause = this.deps.review.pauseRecord(session);
    const live =
      this.deps.guard.session(session)?.pausedAt === claims.pausedAt &&
      pause?.trigger.seq === claims.trigger &&
      this.deps.denials.lastSeq(session) < claims.trigger;
    if (!live || pause === null) {
      throw new TrajgateError(
        'E_LINK_USED',
        `this pause of session ${JSON.stringify(session)} was already decided (approved, resumed or denied): this link does nothing more`,
      );
    }
    if (Date.now() >= claims.expiresAt) {
      throw new TrajgateError(
        'E_LINK_EXPIRED',
        `this link expired at ${new Date(claims.expiresAt).toISOString()} with the hold (policy.holdTimeout); the session is still paused: decide on the review page`,
      );
    }
    return { claims, pause };
  }

  /**
   * The approval the API suggests for the pause's trigger (`GET /api/events/:seq`), when it is
   * one the guard accepts and could cover (none covers trajgate's own files).
   */
  suggestion(pause: PauseRecord): Suggestion | null {
    if (pause.trigger.boundary === TRAJGATE_FILES) return null;
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
    const { claims, pause } = this.check(token);
    const { session, action } = claims;
    const by = 'link';
    const sessions = this.deps.sessions;
    let decided: Decided;
    try {
      if (action === 'once') {
        const { rids: once, at: onceAt } = claims;
        // It covers what it names: once those went (or left), the link has nothing to do. Rids
        // of another gateway are its to release: the record goes out for it to act on.
        const mine = onceAt === this.deps.sessions.replica;
        if (mine && !this.held(session).some((h) => this.covers(claims, h)))
          throw new TrajgateError(
            'E_LINK_USED',
            'the request this approve-once link names is no longer held (already forwarded, timed out or its client left): nothing was done',
          );
        decided = {
          decided: action,
          ...sessions.resumeReport(session, { once, onceAt, by }),
          session,
        };
      } else if (action === 'deny') {
        decided = { decided: action, session, released: sessions.deny(session, { by }) };
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
    // Five fields: a link made before links named their requests (it names none).
    if (!Array.isArray(fields) || (fields.length !== 5 && fields.length !== 7)) throw invalid();
    const [session, pausedAt, trigger, action, expiresAt, rids = [], at = null] =
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
      (at !== null && typeof at !== 'string')
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
    };
  }
}
