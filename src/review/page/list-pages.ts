// The sessions list's filter (state, agent, search) as the page's address holds it
// (`#/?state=paused&q=web`), the pages walked so far (cursors, so Previous goes back), and one
// page fetched for them: what each poll of the list asks, and nothing more.

import { call } from './api.js';
import type { SessionState, SessionsAnswer, SessionView } from '../../wire.js';

/** Rows a page shows: the DOM stays small however many sessions there are. */
export const PAGE_SIZE = 50;
/** A search call looks at 10,000 sessions at most: a page goes on for so many calls at most. */
const SEARCH_CALLS = 10;
/** The API's bound on `q`. */
const SEARCH_MAX = 200;
const STATES: readonly SessionState[] = ['paused', 'flagged', 'active'];

export interface Filter {
  readonly state: SessionState | null;
  /** One agent's session, by its exact id ('' for any). */
  readonly agent: string;
  /** Part of a session's id, any case ('' for none). */
  readonly q: string;
}

export const NO_FILTER: Filter = { state: null, agent: '', q: '' };

/** The filter in `#/?…`; what is not understood is left out. */
export function parseFilter(query: string): Filter {
  const p = new URLSearchParams(query);
  const state = p.get('state') as SessionState | null;
  return {
    state: state !== null && STATES.includes(state) ? state : null,
    agent: (p.get('agent') ?? '').trim(),
    q: (p.get('q') ?? '').trim().slice(0, SEARCH_MAX),
  };
}

function params(f: Filter): URLSearchParams {
  const p = new URLSearchParams();
  if (f.state !== null) p.set('state', f.state);
  if (f.agent !== '') p.set('agent', f.agent);
  if (f.q !== '') p.set('q', f.q);
  return p;
}

/** The list's address for the filter. */
export function filterHash(f: Filter): string {
  const query = params(f).toString();
  return query === '' ? '#/' : `#/?${query}`;
}

export interface Shown {
  readonly sessions: SessionView[];
  readonly next: string | null;
  /** Sessions the filter matches; null for a search (the API counts nothing then). */
  readonly total: number | null;
  readonly counts: Readonly<Record<SessionState, number>>;
}

/** One page from `cursor`: a search goes on while the page has room, SEARCH_CALLS at most. */
export async function fetchPage(f: Filter, cursor: string | null): Promise<Shown> {
  const rows = new Map<string, SessionView>();
  let next = cursor;
  let answer: SessionsAnswer;
  let calls = 0;
  do {
    const p = params(f);
    p.set('limit', String(PAGE_SIZE - rows.size));
    if (next !== null) p.set('cursor', next);
    answer = await call<SessionsAnswer>('GET', `/api/sessions?${p}`);
    // A session that moved between two calls is shown once.
    for (const s of answer.sessions) if (!rows.has(s.id)) rows.set(s.id, s);
    next = answer.next;
  } while (f.q !== '' && next !== null && rows.size < PAGE_SIZE && ++calls < SEARCH_CALLS);
  return { sessions: [...rows.values()], next, total: answer.total, counts: answer.counts };
}

/** Where the list is: its filter, the page shown (its cursor) and those before it. */
export class Pages {
  filter = NO_FILTER;
  /** The cursor the shown page starts after (null: the first page). */
  cursor: string | null = null;
  /** The cursor of the page after this one, from the last poll (null: this is the last). */
  next: string | null = null;
  readonly #before: (string | null)[] = [];

  /** A new filter starts at the first page; false when it is the one shown. */
  setFilter(f: Filter): boolean {
    const now = this.filter;
    if (now.state === f.state && now.agent === f.agent && now.q === f.q) return false;
    this.filter = f;
    this.cursor = null;
    this.next = null;
    this.#before.length = 0;
    return true;
  }

  /** 1 for the first page. */
  get number(): number {
    return this.#before.length + 1;
  }

  forward(): boolean {
    if (this.next === null) return false;
    this.#before.push(this.cursor);
    this.cursor = this.next;
    this.next = null;
    return true;
  }

  back(): boolean {
    if (this.#before.length === 0) return false;
    this.cursor = this.#before.pop() as string | null;
    this.next = null;
    return true;
  }
}
