import { dirname, join } from 'node:path';
import type { CapturedExchange } from '../action/capture.js';
import type { Shape, Slice } from '../config/parts.js';
import { TrajgateError } from '../errors.js';
import { describeValue } from '../event/validate.js';
import type { Guard } from '../guard/guard.js';
import { eventsPage } from '../journal/event-pages.js';
import type { SessionIndex } from '../journal/session-index.js';
import { ApiRules, operate } from './api-rules.js';
import { SESSION_VIEWS, SessionViews } from './api-sessions.js';
import { sessionCapture } from './captures.js';
import { RawJson } from '../http/json.js';
import { intParam } from '../http/query.js';
import type { Review } from './review.js';
import type { Resumed, Sessions } from './sessions.js';
import type {
  ApprovalView,
  PausedAgain,
  SessionDetail,
  SessionsAnswer,
  SessionView,
  TopUpAnswer,
} from '../wire.js';

/** The sessions list's and a session's answers (their shapes are in ../wire.d.ts). */
export type { SessionDetail, SessionsAnswer, SessionView };

/** How long a resume waits for what it let go to be judged again before it answers. */
const REJUDGE_MS = 2_000;
const pick = <T extends object, K extends keyof T>(o: T, keys: readonly K[]): Pick<T, K> =>
  Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Pick<T, K>;

/** The most events one call of the events route returns (`next` pages on). */
const EVENTS_LIMIT = 1000;

/** What the admin API reads of the config at each call (a reload replaces it). */
export const API = {
  ...SESSION_VIEWS,
  journal: ['path'],
  kinds: true,
} as const satisfies Shape;

export type ApiConfig = Slice<typeof API>;

/** The admin API's behaviour, apart from HTTP: what each route reads or does. */
export class Api {
  /** The sessions list, a session's detail, counts by state (api-sessions.ts). */
  readonly views: SessionViews;
  /** Approvals, deny patterns, revokes and events by seq (api-rules.ts). */
  readonly rules: ApiRules;

  constructor(
    private readonly config: ApiConfig,
    guard: Guard,
    private readonly sessions: Sessions,
    private readonly review: Review,
    private readonly index: SessionIndex,
  ) {
    this.rules = new ApiRules(config, guard, sessions, index);
    this.views = new SessionViews(config, guard, sessions, review);
  }

  /** The session's events, newest first, with their statuses: read through the index. */
  async events(id: string, query: URLSearchParams): Promise<RawJson> {
    this.views.known(id);
    const limit = intParam(query, 'limit', 100, 1, EVENTS_LIMIT);
    const before = intParam(query, 'before', Number.MAX_SAFE_INTEGER, 1, Number.MAX_SAFE_INTEGER);
    return new RawJson(await eventsPage(this.config.journal.path, this.index, id, before, limit));
  }

  /** One captured request of the session (`capture.bodies`), request and response. */
  capture(id: string, rid: string): CapturedExchange {
    this.views.known(id);
    return sessionCapture(join(dirname(this.config.journal.path), 'captures'), id, rid);
  }

  approve(id: string | null, body: Record<string, unknown>, by: string): ApprovalView {
    if (id !== null) this.views.known(id);
    return this.rules.approve(id, body, by);
  }

  approvals(): ApprovalView[] {
    return this.rules.approvals();
  }

  /** A deny pattern for the session (`id`) or every session (null). */
  addDeny(id: string | null, body: Record<string, unknown>, by: string) {
    if (id !== null) this.views.known(id);
    return this.rules.addDeny(id, body, by);
  }

  /**
   * A resume; a plain one answers once what it let go was judged again (at most REJUDGE_MS),
   * with `pausedAgain` when that paused the session again at once: "resumed" alone would say
   * the agent runs.
   */
  async resume(
    id: string,
    body: Record<string, unknown>,
    by: string,
  ): Promise<Resumed | { released: number; pausedAgain: PausedAgain | null }> {
    this.views.known(id);
    for (const field of ['reset', 'keepMarks'] as const) {
      if (body[field] !== undefined && typeof body[field] !== 'boolean') {
        throw new TrajgateError(
          'E_BAD_FIELD',
          `field "${field}" must be true or false, got ${describeValue(body[field])}`,
        );
      }
    }
    const once =
      body.once === undefined ? {} : { once: this.#heldRids(id, body.once, body.reset === true) };
    const options = { reset: body.reset === true, keepMarks: body.keepMarks === true, by };
    const done = operate(() => this.sessions.resumeReport(id, { ...options, ...once }));
    if (body.once !== undefined) return done;
    return { released: done.released, pausedAgain: await this.#judged(id, done) };
  }

  /**
   * A top-up (`{budget, amount}`): the session's limit of that budget rises by `amount` in its
   * current window; a session the budget paused resumes, answered as a resume is.
   */
  async topUp(id: string, body: Record<string, unknown>, by: string): Promise<TopUpAnswer> {
    this.views.known(id);
    const { budget, amount } = body;
    if (typeof budget !== 'string' || budget === '')
      throw new TrajgateError(
        'E_BAD_FIELD',
        `field "budget" must be a budget's name, got ${describeValue(budget)}`,
      );
    if (!Number.isSafeInteger(amount) || (amount as number) < 1)
      throw new TrajgateError(
        'E_BAD_FIELD',
        `field "amount" must be a whole number of at least 1, got ${describeValue(amount)}`,
      );
    const done = operate(() => this.sessions.topUp(id, budget, amount as number, by));
    const pausedAgain = done === null ? null : await this.#judged(id, done);
    // Read once what the resume let go was judged: it counts toward the budget.
    const use = this.views.budgets(id).find((b) => b.name === budget);
    return {
      budget: use ?? null,
      amount: amount as number,
      resumed: done !== null,
      released: done?.released ?? 0,
      pausedAgain,
    };
  }

  /**
   * Waits (at most REJUDGE_MS) for what a resume let go to be judged again: the pause that put
   * the session on hold again at once, or null. "Resumed" alone would say the agent runs.
   */
  async #judged(id: string, done: Resumed): Promise<PausedAgain | null> {
    await this.sessions.afterJudged(
      done.judged.map((h) => h.rid),
      REJUDGE_MS,
    );
    const pause = this.sessions.isPaused(id) ? this.review.pauseRecord(id) : null;
    return pause === null
      ? null
      : {
          reason: pause.reason,
          boundary: pause.boundary,
          count: pause.count,
          trigger: pick(pause.trigger, ['seq', 'kind', 'method', 'target']),
        };
  }

  /** `once`: request ids (rid) of requests the session holds here, each named once. */
  #heldRids(id: string, value: unknown, reset: boolean): number[] {
    const rid = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) > 0;
    if (!Array.isArray(value) || value.length === 0 || !value.every(rid))
      throw new TrajgateError(
        'E_BAD_FIELD',
        `field "once" must be a non-empty array of request ids (rid) of held requests, got ${describeValue(value)}`,
      );
    // Resuming an active session without `reset` is refused as such (E_NOT_PAUSED).
    if (!this.sessions.isPaused(id) && !reset) return value;
    const held = this.sessions.held(id);
    const unknown = value.filter((n) => !held.some((h) => h.rid === n));
    if (unknown.length > 0) {
      const now = held.map((h) => `#${h.rid} ${h.what}`).join(', ') || 'none';
      throw new TrajgateError(
        'E_NOT_HELD',
        `request ${unknown.map((n) => `#${n}`).join(', ')} is not held for session ${JSON.stringify(id)} (held now: ${now}); nothing was done`,
      );
    }
    return [...new Set(value)];
  }

  deny(id: string, by: string): { released: number } {
    this.views.known(id);
    return { released: operate(() => this.sessions.deny(id, { by })) };
  }
}
