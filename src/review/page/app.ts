// The review page: token form, routing between the sessions list and one session, and the
// polling loop (every second; every two while the API is down; none while the tab is hidden)
// that keeps live what is shown: the list's page, the open session, the journal's health.

import { ApiFailure, Down, token, Unauthorized } from './api.js';
import { byId, clock, setText } from './dom.js';
import { hideHealth, loadHealth } from './health.js';
import { ListControls } from './list-controls.js';
import { fetchPage, filterHash, NO_FILTER, Pages, parseFilter } from './list-pages.js';
import type { Filter } from './list-pages.js';
import { SessionPage } from './session.js';
import { SessionsList } from './sessions.js';

const POLL_MS = 1_000;
const RETRY_MS = 2_000;

/**
 * `#/session/ID`, or `#/session/ID/event/SEQ` (that event selected: links in chat, pairs); the
 * list is `#/`, filtered with `#/?state=&agent=&q=`.
 */
type Route = { kind: 'list'; filter: Filter } | { kind: 'session'; id: string; event?: number };

function currentRoute(): Route {
  const m = /^#\/session\/(.+?)(?:\/event\/(\d{1,15}))?$/.exec(location.hash);
  if (m) {
    try {
      const id = decodeURIComponent(m[1] as string);
      return m[2] === undefined ? { kind: 'session', id } : { kind: 'session', id, event: +m[2] };
    } catch {
      // a malformed id: the list
    }
  }
  const query = /^#\/?\?(.*)$/.exec(location.hash);
  return { kind: 'list', filter: query ? parseFilter(query[1] as string) : NO_FILTER };
}
const routeKey = (r: Route) => (r.kind === 'list' ? 'list' : `session:${r.id}`);

const view = byId('view');
const login = byId('login');
const loginForm = byId<HTMLFormElement>('login-form');
const tokenInput = byId<HTMLInputElement>('token-input');
const loginError = byId('login-error');
const banner = byId('banner');
const conn = byId('conn');
const connText = byId('conn-text');
const pausedLink = byId<HTMLAnchorElement>('nav-paused');
const signOut = byId<HTMLButtonElement>('sign-out');

const pages = new Pages();
const list = new SessionsList(
  new ListControls(
    (filter) => (location.hash = filterHash(filter)),
    (by) => {
      if (by === 1 ? pages.forward() : pages.back()) wake();
    },
  ),
);
const sessionPage = new SessionPage({ refresh: () => wake(), unauthorized: () => refused() });

let down: { since: number; attempts: number; last: number } | null = null;
let lastOk = 0;

function setConn(state: 'live' | 'down' | 'signed-out', text: string): void {
  conn.dataset.state = state;
  setText(connText, text);
}

function showLogin(message: string | null): void {
  view.replaceChildren();
  // No data stays in the page without a token, not even detached from it.
  list.clear();
  if (sessionPage.id !== '') sessionPage.show('');
  login.hidden = false;
  signOut.hidden = true;
  pausedLink.hidden = true;
  banner.hidden = true;
  hideHealth();
  down = null;
  setConn('signed-out', 'Not signed in');
  setText(loginError, message ?? '');
  loginError.hidden = message === null;
  document.title = 'trajgate review';
  tokenInput.focus();
}

function refused(): void {
  token.clear();
  showLogin(
    'The admin API refused this token (401 Unauthorized), so nothing is shown. Use admin.token from the config, or the admin-token file that `trajgate start` names.',
  );
}

function mount(): void {
  if (token.get() === null) return showLogin(null);
  login.hidden = true;
  signOut.hidden = false;
  const r = currentRoute();
  if (r.kind === 'list') {
    pages.setFilter(r.filter);
    if (view.firstChild !== list.element) view.replaceChildren(list.element);
    document.title = 'Sessions · trajgate review';
    return;
  }
  if (sessionPage.id !== r.id) sessionPage.show(r.id);
  // Back to the list keeps its filter and page.
  for (const back of sessionPage.element.querySelectorAll('a.back'))
    back.setAttribute('href', filterHash(pages.filter));
  if (r.event !== undefined) sessionPage.focus(r.event);
  if (view.firstChild !== sessionPage.element) view.replaceChildren(sessionPage.element);
  document.title = `${r.id} · trajgate review`;
}

function setDown(reason: string): void {
  const now = Date.now();
  down = down
    ? { ...down, attempts: down.attempts + 1, last: now }
    : { since: now, attempts: 1, last: now };
  setConn('down', 'API down · retrying');
  banner.hidden = false;
  banner.dataset.tone = 'down';
  setText(
    banner,
    `The admin API is down or unreachable (${reason}). Retrying every ${RETRY_MS / 1000} s — attempt ${down.attempts}, last at ${clock(now)}.` +
      (lastOk ? ` What is shown is from ${clock(lastOk)}; actions are disabled.` : ''),
  );
  sessionPage.setDown(true);
  view.classList.add('is-stale');
}

function setUp(): void {
  lastOk = Date.now();
  if (down) {
    down = null;
    sessionPage.setDown(false);
  }
  view.classList.remove('is-stale');
  if (banner.dataset.tone === 'down') banner.hidden = true;
  setConn('live', `Live · ${clock(lastOk)}`);
}

function problem(text: string): void {
  banner.hidden = false;
  banner.dataset.tone = 'error';
  setText(banner, text);
}

/** The list's page as it is now (same filter and cursor); the top bar's paused count. */
async function loadSessions(): Promise<void> {
  const { filter, cursor } = pages;
  const shown = await fetchPage(filter, cursor);
  // Turned or filtered meanwhile: the next poll shows the page asked for.
  if (pages.filter !== filter || pages.cursor !== cursor) return;
  pages.next = shown.next;
  list.update(shown, filter, pages.number);
  const paused = shown.counts.paused;
  pausedLink.hidden = paused === 0;
  setText(pausedLink, `${paused.toLocaleString('en')} paused`);
}

/** One poll of what the current view shows; the delay before the next (-1: wait for a wake). */
async function poll(): Promise<number> {
  if (token.get() === null) {
    showLogin(null);
    return -1;
  }
  const r = currentRoute();
  try {
    if (r.kind === 'list') await Promise.all([loadSessions(), loadHealth()]);
    else await Promise.all([sessionPage.load(), loadSessions(), loadHealth()]);
    if (token.get() === null) {
      showLogin(null); // forgotten while the poll was in flight
      return -1;
    }
    setUp();
    if (banner.dataset.tone === 'error') banner.hidden = true;
    return POLL_MS;
  } catch (err) {
    if (err instanceof Unauthorized) {
      refused();
      return -1;
    }
    if (err instanceof Down) {
      setDown(err.message);
      return RETRY_MS;
    }
    if (err instanceof ApiFailure) {
      setUp();
      if (r.kind === 'session' && err.status === 404 && routeKey(currentRoute()) === routeKey(r)) {
        sessionPage.missing(err.message);
        return RETRY_MS;
      }
      problem(`The admin API answered ${err.status} ${err.code}: ${err.message}`);
      return RETRY_MS;
    }
    problem(`Unexpected error in the page: ${String(err)}`);
    return RETRY_MS;
  }
}

let woken = false;
let wakeUp: (() => void) | null = null;

/** Polls now (after the one in flight, if any). */
function wake(): void {
  woken = true;
  wakeUp?.();
}

async function loop(): Promise<never> {
  for (;;) {
    woken = false;
    const delay = await poll();
    if (woken) continue;
    // A hidden tab asks nothing: it polls again once shown (visibilitychange wakes it).
    const hidden = document.visibilityState === 'hidden';
    await new Promise<void>((resolve) => {
      const timer = delay >= 0 && !hidden ? setTimeout(resolve, delay) : undefined;
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wakeUp = null;
  }
}

loginForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const value = tokenInput.value.trim();
  if (value === '') {
    setText(loginError, 'Paste the admin token first.');
    loginError.hidden = false;
    return;
  }
  token.set(value);
  tokenInput.value = '';
  setText(loginError, '');
  loginError.hidden = true;
  mount();
  wake();
});

signOut.addEventListener('click', () => {
  token.clear();
  showLogin(null);
});

window.addEventListener('hashchange', () => {
  mount();
  if (token.get() !== null) {
    byId('main').focus({ preventScroll: true });
    wake();
  }
});

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') wake();
});

setInterval(() => {
  if (token.get() !== null && down === null && currentRoute().kind === 'session')
    sessionPage.tick();
}, 1_000);

mount();
void loop();
