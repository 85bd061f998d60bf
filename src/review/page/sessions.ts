// The sessions list: one page of rows, paused first, then flagged (a REVIEW since the last
// operator action). Rows are kept by session id and only
// their changed text is touched on each poll, so live updates neither flicker nor shift.

import { ago, clock, fill, h, plural, setText, stamp } from './dom.js';
import type { ListControls } from './list-controls.js';
import type { Filter, Shown } from './list-pages.js';
import { PAGE_SIZE } from './list-pages.js';
import type { SessionView } from '../../wire.js';

interface Row {
  readonly tr: HTMLTableRowElement;
  readonly link: HTMLAnchorElement;
  readonly state: HTMLElement;
  readonly stateNote: HTMLElement;
  readonly counts: HTMLElement;
  readonly held: HTMLElement;
  readonly events: HTMLElement;
  readonly last: HTMLElement;
  countsKey: string;
}

/** What an empty page says: no sessions at all, a search going on, a page past the last, none. */
const EMPTY = {
  none: [
    'No sessions yet',
    'Sessions appear here as soon as an agent sends its first request through the proxy or the tool bridge.',
  ],
  searching: [
    'Nothing found here yet',
    'A search looks at 10,000 sessions a call: Next → searches on.',
  ],
  past: [
    'No more sessions',
    'Those that were here moved up or were forgotten: ← Previous goes back.',
  ],
  unmatched: [
    'No sessions match',
    'None is in this state or matches the search: change it or choose All.',
  ],
} as const;

export const sessionHref = (id: string) => `#/session/${encodeURIComponent(id)}`;
/**
 * ` after #41` when a sequence rule paused it, ` calls` when a budget did (an older gateway
 * sends no pausedRule).
 */
const after = (s: SessionView) =>
  s.pausedRule?.after !== undefined
    ? ` after #${s.pausedRule.after}`
    : s.pausedRule && s.pausedRule.name !== s.pausedBy
      ? ` ${s.pausedRule.name}`
      : '';

export class SessionsList {
  readonly element: HTMLElement;
  readonly #summary: HTMLElement;
  readonly #tbody: HTMLTableSectionElement;
  readonly #table: HTMLTableElement;
  readonly #empty: HTMLElement;
  readonly #emptyTitle: HTMLElement;
  readonly #emptyText: HTMLElement;
  readonly #rows = new Map<string, Row>();
  #order = '';

  constructor(private readonly controls: ListControls) {
    this.#summary = h('p', {
      class: 'list-summary',
      text: 'Loading…',
      attrs: { id: 'sessions-summary' },
    });
    this.#tbody = h('tbody');
    const th = (text: string, cls = '') => h('th', { attrs: { scope: 'col' }, class: cls, text });
    this.#table = h(
      'table',
      { class: 'sessions', attrs: { 'aria-describedby': 'sessions-summary' } },
      h('caption', { class: 'visually-hidden', text: 'Sessions, paused first, then flagged' }),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          th('Session', 'col-id'),
          th('State', 'col-state'),
          th('Crossings by boundary', 'col-counts'),
          th('Held', 'col-num'),
          th('Events', 'col-num'),
          th('Last activity', 'col-last'),
        ),
      ),
      this.#tbody,
    );
    this.#emptyTitle = h('p', { class: 'empty-title' });
    this.#emptyText = h('p');
    this.#empty = h(
      'div',
      { class: 'empty', attrs: { hidden: '' } },
      this.#emptyTitle,
      this.#emptyText,
    );
    this.element = h(
      'section',
      { class: 'view view-list', attrs: { 'aria-labelledby': 'sessions-title' } },
      h(
        'div',
        { class: 'view-head' },
        h('h1', { attrs: { id: 'sessions-title' }, text: 'Sessions' }),
        this.#summary,
      ),
      controls.filters,
      h('div', { class: 'card card-flush' }, this.#table, this.#empty),
      controls.pager,
    );
  }

  /** Drops every row (signed out: the page keeps no data without a token). */
  clear(): void {
    for (const row of this.#rows.values()) row.tr.remove();
    this.#rows.clear();
    this.#order = '';
    setText(this.#summary, 'Loading…');
    this.#empty.hidden = true;
  }

  /** The page `shown` of the list for `filter`; `page`: its number, and whether one follows. */
  update(shown: Shown, filter: Filter, page: number, now = Date.now()): void {
    const { sessions, counts } = shown;
    const flagged = counts.flagged;
    const held = sessions.reduce((n, s) => n + s.held, 0);
    const more = shown.next !== null;
    const several = page > 1 || more;
    const from = (page - 1) * PAGE_SIZE + 1;
    setText(
      this.#summary,
      (filter.q === ''
        ? plural(shown.total ?? 0, 'session')
        : `${plural(sessions.length, 'match', 'matches')} for “${filter.q}”${more ? ' so far' : ''}`) +
        ` · ${counts.paused} paused · ${plural(held, 'held request')}${several ? ' on this page' : ''}` +
        (flagged > 0 ? ` · ${flagged} flagged for review` : '') +
        (several && filter.q === '' && sessions.length > 0
          ? ` · showing ${from.toLocaleString('en')}–${(from + sessions.length - 1).toLocaleString('en')}`
          : ''),
    );
    this.controls.update(filter, counts, { number: page, more });
    this.#empty.hidden = sessions.length > 0;
    this.#table.hidden = sessions.length === 0;
    const [title, text] =
      counts.paused + counts.flagged + counts.active === 0
        ? EMPTY.none
        : more
          ? EMPTY.searching
          : page > 1
            ? EMPTY.past
            : EMPTY.unmatched;
    setText(this.#emptyTitle, title);
    setText(this.#emptyText, text);
    const seen = new Set<string>();
    for (const s of sessions) {
      seen.add(s.id);
      let row = this.#rows.get(s.id);
      if (!row) {
        row = this.#row(s.id);
        this.#rows.set(s.id, row);
      }
      this.#updateRow(row, s, now);
    }
    for (const [id, row] of this.#rows) {
      if (seen.has(id)) continue;
      row.tr.remove();
      this.#rows.delete(id);
    }
    // Re-append only when the order changed: moving rows would drop the keyboard focus.
    const order = sessions.map((s) => s.id).join('\n');
    if (order !== this.#order) {
      this.#order = order;
      const focused = document.activeElement;
      for (const s of sessions) this.#tbody.appendChild((this.#rows.get(s.id) as Row).tr);
      if (focused instanceof HTMLElement && focused !== document.activeElement) focused.focus();
    }
  }

  #row(id: string): Row {
    const link = h('a', { class: 'session-link', text: id, attrs: { href: sessionHref(id) } });
    const state = h('span', { class: 'badge' });
    const stateNote = h('span', { class: 'state-note' });
    const counts = h('span', { class: 'chips' });
    const held = h('td', { class: 'col-num', attrs: { 'data-label': 'Held' } });
    const events = h('td', { class: 'col-num', attrs: { 'data-label': 'Events' } });
    const last = h('td', { class: 'col-last', attrs: { 'data-label': 'Last activity' } });
    const tr = h(
      'tr',
      { class: 'session-row' },
      h('th', { class: 'col-id', attrs: { scope: 'row' } }, link),
      h('td', { class: 'col-state', attrs: { 'data-label': 'State' } }, state, stateNote),
      h('td', { class: 'col-counts', attrs: { 'data-label': 'Crossings' } }, counts),
      held,
      events,
      last,
    );
    // The whole row opens the session; the link inside keeps it keyboard reachable.
    tr.addEventListener('click', (e) => {
      if (!(e.target instanceof Element && e.target.closest('a'))) link.click();
    });
    return { tr, link, state, stateNote, counts, held, events, last, countsKey: '' };
  }

  #updateRow(row: Row, s: SessionView, now: number): void {
    const paused = s.state === 'paused';
    const flagged = s.state === 'flagged';
    row.tr.classList.toggle('is-paused', paused);
    row.tr.classList.toggle('is-flagged', flagged);
    row.state.className = paused
      ? 'badge badge-pause'
      : flagged
        ? 'badge badge-flag'
        : 'badge badge-active';
    setText(row.state, paused ? 'Paused' : flagged ? 'Flagged' : 'Active');
    setText(
      row.stateNote,
      paused && s.pausedAt
        ? `${s.pausedBy ?? 'held'}${after(s)} · since ${clock(s.pausedAt)}`
        : flagged
          ? plural(s.flagged ?? 1, 'REVIEW')
          : '',
    );
    row.stateNote.title = s.pausedAt ? `paused at ${stamp(s.pausedAt)}` : '';
    const entries = Object.entries(s.counts).sort(([a], [b]) => a.localeCompare(b));
    const key = JSON.stringify(entries);
    if (key !== row.countsKey) {
      row.countsKey = key;
      fill(
        row.counts,
        ...(entries.length === 0
          ? [h('span', { class: 'muted', text: 'none' })]
          : entries.map(([b, n]) =>
              h(
                'span',
                { class: `chip${paused && b === s.pausedBy ? ' chip-pause' : ''}` },
                h('span', { class: 'chip-name', text: b }),
                h('span', { class: 'chip-count', text: String(n) }),
              ),
            )),
      );
    }
    setText(row.held, s.held > 0 ? String(s.held) : '–');
    row.held.classList.toggle('has-held', s.held > 0);
    setText(row.events, s.events.toLocaleString('en'));
    setText(row.last, ago(s.lastActivity, now));
    row.last.title = s.lastActivity ? stamp(s.lastActivity) : '';
  }
}
