import type { Guard } from '../guard/guard.js';
import { boundaryOfKey } from '../guard/policy.js';
import { TrajgateError } from '../errors.js';
import type {
  BudgetView,
  SessionDetail,
  SessionState,
  SessionsAnswer,
  SessionView,
} from '../wire.js';
import { approvalView, denyView } from './api-rules.js';
import type { Shape, Slice } from '../config/parts.js';
import type { Review } from './review.js';
import { SessionList, sessionsQuery } from './session-list.js';
import type { Key } from './session-order.js';
import type { Sessions } from './sessions.js';

/** What the sessions' views read of the config at each call (part of the admin API's). */
export const SESSION_VIEWS = {
  agents: true,
  capture: ['bodies'],
} as const satisfies Shape;

type ViewsConfig = Slice<typeof SESSION_VIEWS>;

const iso = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString() : null);

/**
 * What the admin API shows of sessions: the list (kept in order as records are committed), a
 * session's detail, and how many are in each state, each read at the cost of what it returns.
 */
export class SessionViews {
  readonly #list = new SessionList((id) => this.#key(id));
  /** The configured agents the list was last told of: each is listed, active or not. */
  #agents: ViewsConfig['agents'] = null;
  #agentIds: ReadonlySet<string> = new Set();

  constructor(
    private readonly config: ViewsConfig,
    private readonly guard: Guard,
    private readonly sessions: Sessions,
    private readonly review: Review,
  ) {
    review.onChange((id) => this.#list.touch(id));
    guard.shared?.onRefreshed((id) => this.#list.touch(id));
    this.#readAgents();
    this.#list.load(
      new Set([
        ...review.sessions(),
        ...[...guard.sessions()].map(([id]) => id),
        ...this.#agentIds,
      ]),
    );
  }

  /**
   * A page of the sessions list (`sessionsQuery`): paused first, then flagged, then the most
   * recently active, read from the list kept in order as records are committed, so a call costs
   * what it returns (a search: what it looks at); `next` pages on, `total` counts what the
   * filter matches.
   */
  list(query: URLSearchParams): SessionsAnswer {
    const q = sessionsQuery(query);
    this.#agentsChanged();
    const page = this.#list.page(q);
    const sessions = page.ids.map((id) => this.#view(id));
    return { sessions, next: page.next, total: page.total, counts: page.counts };
  }

  /** Sessions in the state now, from the list's sections (the gauges read it when scraped). */
  count(state: SessionState): number {
    this.#agentsChanged();
    return this.#list.count(state);
  }

  detail(id: string): SessionDetail {
    this.known(id);
    const now = Date.now();
    return {
      ...this.#view(id),
      pause: this.review.pauseRecord(id),
      heldRequests: this.sessions.held(id).map((h) => ({
        id: h.id,
        rid: h.rid,
        what: h.what,
        bytes: h.bytes,
        since: new Date(h.since).toISOString(),
        deadline: new Date(h.deadline).toISOString(),
        waitedMs: now - h.since,
        timeoutInMs: Math.max(0, h.deadline - now),
      })),
      recent: this.review.recent(id),
      approvals: this.guard.approvals.list(id, now).map(approvalView),
      reviews: this.review.flags(id).reviews,
      denies: this.guard.denies.all(id).map(denyView),
      allowlist: this.guard.policy.allowlistFor(id),
      captures: this.config.capture.bodies,
      handshakes: this.review.handshakes(id),
      credentials: this.review.credentials(id),
      budgets: this.budgets(id, now),
    };
  }

  /** The session's budgets at `now`: a window that ended shows as none open. */
  budgets(id: string, now = Date.now()): BudgetView[] {
    const state = this.guard.session(id);
    return this.guard.policy.budgets.map((b) => {
      const use = state?.budgets.get(b.name);
      const open = use !== undefined && now < use.start + b.windowMs ? use : null;
      return {
        name: b.name,
        measure: b.measure,
        limit: b.limit + (open?.extra ?? 0),
        toppedUp: open?.extra ?? 0,
        used: open?.used ?? 0,
        within: b.windowText,
        verdict: b.verdict,
        windowStart: iso(open?.start),
        windowEnds: open === null ? null : iso(open.start + b.windowMs),
      };
    });
  }

  /** 404 for a session nothing is known of. */
  known(id: string): void {
    this.#agentsChanged();
    if (this.#key(id) === null)
      throw new TrajgateError('E_UNKNOWN_SESSION', `no session ${JSON.stringify(id)}`);
  }

  #view(id: string): SessionView {
    const state = this.guard.session(id);
    const counts: Record<string, number> = {};
    for (const [key, n] of state?.counts ?? []) {
      const b = boundaryOfKey(key);
      counts[b] = (counts[b] ?? 0) + n;
    }
    const activity = this.review.activity(id);
    const flagged = activity?.flagged ?? 0;
    const paused = state?.pausedAt != null;
    return {
      id,
      state: paused ? 'paused' : flagged > 0 ? 'flagged' : 'active',
      flagged,
      counts,
      pausedAt: iso(state?.pausedAt),
      pausedBy: state?.pausedBy ?? null,
      pausedRule: paused ? (this.review.pauseRecord(id)?.trigger.rule ?? null) : null,
      held: this.sessions.held(id).length,
      lastActivity: iso(activity?.lastActivity),
      events: activity?.events ?? 0,
      credentialNames: this.review.credentials(id).map((c) => c.name),
    };
  }

  /** Where the session sorts; null when nothing is known of it (it leaves the list). */
  #key(id: string): Key | null {
    const state = this.guard.session(id);
    const activity = this.review.activity(id);
    if (!state && !activity && !this.#agentIds.has(id)) return null;
    const rank = state?.pausedAt != null ? 2 : (activity?.flagged ?? 0) > 0 ? 1 : 0;
    return { rank, at: activity?.lastActivity ?? 0 };
  }

  /** After a reload: agents added are listed, those removed leave unless something is known. */
  #agentsChanged(): void {
    const before = this.#agents;
    if (!this.#readAgents()) return;
    for (const a of [...(before ?? []), ...(this.#agents ?? [])]) this.#list.touch(a.id);
  }

  /** Whether the configured agents changed since last read. */
  #readAgents(): boolean {
    if (this.config.agents === this.#agents) return false;
    this.#agents = this.config.agents;
    this.#agentIds = new Set(this.#agents?.map((a) => a.id));
    return true;
  }
}
