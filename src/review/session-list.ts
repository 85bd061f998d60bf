import { TrajgateError } from '../errors.js';
import { intParam, knownParams } from '../http/query.js';
import type { SessionState } from '../wire.js';
import type { Cursor, Key, Rank } from './session-order.js';
import { SessionOrder } from './session-order.js';

/** The most sessions one call of `GET /api/sessions` returns, and how many when not asked. */
export const SESSIONS_LIMIT = 500;
const SESSIONS_DEFAULT = 100;
/** Sessions one search (`q`) looks at per call, at most: about a millisecond's work. */
export const SEARCH_SCAN = 10_000;
/** The longest search (`q`), in characters. */
const SEARCH_MAX = 200;

export const RANKS: Record<SessionState, Rank> = { active: 0, flagged: 1, paused: 2 };
const STATES = Object.keys(RANKS) as SessionState[];
/** Sessions placed per turn of the event loop when no read waits (a few ms at most). */
const PLACED_PER_TURN = 2000;

/** What `GET /api/sessions` asks for. */
export interface SessionsQuery {
  readonly ranks: ReadonlySet<Rank>;
  readonly cursor: Cursor | null;
  readonly limit: number;
  /** One session: the agent's (its id names its session), or a client address without agents. */
  readonly agent: string | null;
  /** Sessions whose id holds this, in lower case (`q`); null: every session. */
  readonly search: string | null;
}

export interface SessionsPage {
  readonly ids: string[];
  readonly next: string | null;
  /** Null for a search: it counts only what it looked at. */
  readonly total: number | null;
  readonly counts: Record<SessionState, number>;
}

/**
 * `limit`, `cursor`, `state` (repeatable or comma-separated), `agent` and `q`; 400 for anything
 * else.
 */
export function sessionsQuery(query: URLSearchParams): SessionsQuery {
  knownParams(query, ['limit', 'cursor', 'state', 'agent', 'q']);
  const states = query.getAll('state').flatMap((s) => s.split(','));
  for (const s of states) {
    if (!(STATES as string[]).includes(s)) {
      throw new TrajgateError(
        'E_BAD_FIELD',
        `query "state" must be ${STATES.join(', ')} (repeated or comma-separated), got ${JSON.stringify(s)}`,
      );
    }
  }
  const agents = query.getAll('agent');
  if (agents.length > 1 || agents[0] === '') {
    throw new TrajgateError('E_BAD_FIELD', 'query "agent" must name one agent (its id)');
  }
  const q = query.getAll('q');
  if (q.length > 1 || (q[0] !== undefined && (q[0] === '' || q[0].length > SEARCH_MAX))) {
    throw new TrajgateError(
      'E_BAD_FIELD',
      `query "q" must be one text of 1 to ${SEARCH_MAX} characters (part of a session id), got ${q.length > 1 ? `${q.length} of them` : `${q[0]?.length} characters`}`,
    );
  }
  const cursor = query.get('cursor');
  return {
    ranks: new Set((states.length ? states : STATES).map((s) => RANKS[s as SessionState])),
    cursor: cursor === null ? null : decodeCursor(cursor),
    limit: intParam(query, 'limit', SESSIONS_DEFAULT, 1, SESSIONS_LIMIT),
    agent: agents[0] ?? null,
    search: q[0]?.toLowerCase() ?? null,
  };
}

/** Opaque to clients: the last row's place in the order, so it stays valid as sessions move. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.rank, c.at, c.id])).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  const [rank, at, id] = Array.isArray(value) && value.length === 3 ? value : [];
  if (![0, 1, 2].includes(rank) || !Number.isSafeInteger(at) || at < 0 || typeof id !== 'string') {
    throw new TrajgateError(
      'E_BAD_FIELD',
      `query "cursor" is not a cursor this gateway gave (pass "next" of the previous answer as it is), got ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  return { rank, at, id };
}

/**
 * The sessions list, kept in order as sessions change: a change marks the session (`touch`),
 * and marked sessions are placed again once the change is complete (the next turn of the event
 * loop, or the next read), each at the cost of one move. `keyOf`: where a session sorts, null
 * when it is no longer known (then it leaves the list).
 */
export class SessionList {
  readonly #order = new SessionOrder();
  readonly #dirty = new Set<string>();
  #scheduled: NodeJS.Immediate | null = null;

  constructor(private readonly keyOf: (id: string) => Key | null) {}

  /** Places the sessions `ids` at once, in a list that holds none yet (a start). */
  load(ids: Iterable<string>): void {
    const keys: [string, Key][] = [];
    for (const id of ids) {
      const key = this.keyOf(id);
      if (key !== null) keys.push([id, key]);
    }
    this.#order.load(keys);
  }

  touch(id: string): void {
    this.#dirty.add(id);
    this.#scheduled ??= setImmediate(() => this.#flushSome()).unref();
  }

  /** Places every marked session (before a read). */
  flush(): void {
    if (this.#scheduled !== null) clearImmediate(this.#scheduled);
    this.#scheduled = null;
    this.#place(Infinity);
  }

  /** A turn's share: after a start (every session marked) the rest waits for the next turn. */
  #flushSome(): void {
    this.#scheduled = null;
    this.#place(PLACED_PER_TURN);
    if (this.#dirty.size > 0) this.#scheduled = setImmediate(() => this.#flushSome()).unref();
  }

  #place(most: number): void {
    let placed = 0;
    for (const id of this.#dirty) {
      if (placed++ >= most) return;
      this.#dirty.delete(id);
      const key = this.keyOf(id);
      if (key === null) this.#order.remove(id);
      else this.#order.set(id, key);
    }
  }

  page(q: SessionsQuery): SessionsPage {
    this.flush();
    const counts = { active: 0, flagged: 0, paused: 0 };
    for (const s of STATES) counts[s] = this.#order.count(RANKS[s]);
    const search = q.search;
    const match = search === null ? null : (id: string) => id.toLowerCase().includes(search);
    if (q.agent !== null) {
      const key = this.#order.key(q.agent);
      const listed = key !== undefined && q.ranks.has(key.rank) && (match?.(q.agent) ?? true);
      const ids = listed && q.cursor === null ? [q.agent] : [];
      return { ids, next: null, total: match !== null ? null : listed ? 1 : 0, counts };
    }
    const scan = match === null ? Infinity : SEARCH_SCAN;
    const { ids, next } = this.#order.page(q.ranks, q.cursor, q.limit, match, scan);
    // A row placed by a change no listener saw is placed again for the next read.
    for (const id of ids) {
      const now = this.keyOf(id);
      const was = this.#order.key(id);
      if (now?.rank !== was?.rank || now?.at !== was?.at) this.touch(id);
    }
    const total =
      match === null
        ? STATES.reduce((n, s) => n + (q.ranks.has(RANKS[s]) ? counts[s] : 0), 0)
        : null;
    return { ids, next: next && encodeCursor(next), total, counts };
  }

  /** Sessions in the state now (what the gauges read): the sections' sizes, no scan. */
  count(state: SessionState): number {
    this.flush();
    return this.#order.count(RANKS[state]);
  }
}
