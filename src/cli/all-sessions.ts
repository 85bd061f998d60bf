import type { SessionsAnswer, SessionView } from '../wire.js';

/** The most pages `allSessions` reads: 500 each, far beyond any fleet, so a loop cannot spin. */
const MAX_PAGES = 10_000;

/**
 * Every session, page after page (`next`) of `GET /api/sessions?limit=500`. A session that
 * moves while the pages are read (new activity, a pause) may come twice: listed once, where
 * it was first seen.
 */
export async function allSessions(
  call: (method: 'GET', path: string) => Promise<unknown>,
): Promise<SessionView[]> {
  const seen = new Map<string, SessionView>();
  let cursor: string | null = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const query = new URLSearchParams({ limit: '500', ...(cursor ? { cursor } : {}) });
    const page = (await call('GET', `/api/sessions?${query}`)) as SessionsAnswer;
    for (const s of page.sessions) if (!seen.has(s.id)) seen.set(s.id, s);
    cursor = page.next;
    if (cursor === null) break;
  }
  return [...seen.values()];
}
