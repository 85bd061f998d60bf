// Above and below the sessions list: the states with their counts (links that filter), the
// search form (part of an id, or one agent), and Previous / Next through the pages.

import { h, setText } from './dom.js';
import { filterHash } from './list-pages.js';
import type { Filter } from './list-pages.js';
import type { SessionState } from '../../wire.js';

const TABS: readonly [SessionState | null, string][] = [
  [null, 'All'],
  ['paused', 'Paused'],
  ['flagged', 'Flagged'],
  ['active', 'Active'],
];

export class ListControls {
  readonly filters: HTMLElement;
  readonly pager: HTMLElement;
  readonly #tabs = new Map<SessionState | null, { link: HTMLAnchorElement; count: HTMLElement }>();
  readonly #q: HTMLInputElement;
  readonly #agent: HTMLInputElement;
  readonly #clear: HTMLAnchorElement;
  readonly #prev: HTMLButtonElement;
  readonly #next: HTMLButtonElement;
  readonly #where: HTMLElement;
  #filter: Filter | null = null;

  /** `go`: show the list for this filter (its address); `turn`: next (1) or previous (-1). */
  constructor(go: (f: Filter) => void, turn: (by: 1 | -1) => void) {
    const tabs = TABS.map(([state, name]) => {
      const count = h('span', { class: 'tab-count' });
      const link = h('a', { class: `state-tab tab-${state ?? 'all'}` }, name, count);
      this.#tabs.set(state, { link, count });
      return link;
    });
    this.#q = h('input', {
      attrs: { id: 'list-q', type: 'search', maxlength: '200', spellcheck: 'false' },
    });
    this.#agent = h('input', {
      attrs: { id: 'list-agent', type: 'text', spellcheck: 'false' },
    });
    this.#clear = h('a', { class: 'btn btn-quiet', text: 'Clear' });
    const form = h(
      'form',
      { class: 'list-search', attrs: { role: 'search' } },
      h(
        'span',
        { class: 'field' },
        h('label', { attrs: { for: 'list-q' }, text: 'Search ids' }),
        this.#q,
      ),
      h(
        'span',
        { class: 'field' },
        h('label', { attrs: { for: 'list-agent' }, text: 'Agent id' }),
        this.#agent,
      ),
      h('button', { class: 'btn', attrs: { type: 'submit' }, text: 'Search' }),
      this.#clear,
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const state = this.#filter?.state ?? null;
      go({ state, q: this.#q.value.trim(), agent: this.#agent.value.trim() });
    });
    this.filters = h(
      'div',
      { class: 'list-filters' },
      h('nav', { class: 'state-tabs', attrs: { 'aria-label': 'Sessions by state' } }, ...tabs),
      form,
    );
    this.#prev = h('button', { class: 'btn', attrs: { type: 'button' }, text: '← Previous' });
    this.#next = h('button', { class: 'btn', attrs: { type: 'button' }, text: 'Next →' });
    this.#where = h('span', { class: 'pager-where', attrs: { 'aria-live': 'polite' } });
    this.#prev.addEventListener('click', () => turn(-1));
    this.#next.addEventListener('click', () => turn(1));
    this.pager = h(
      'nav',
      { class: 'pager', attrs: { 'aria-label': 'Pages of sessions' } },
      this.#prev,
      this.#where,
      this.#next,
    );
  }

  /** The filter shown (its links and fields), the counts by state, and where the pages are. */
  update(
    filter: Filter,
    counts: Readonly<Record<SessionState, number>>,
    page: { number: number; more: boolean },
  ): void {
    if (filter !== this.#filter) {
      this.#filter = filter;
      // Typing is not overwritten by a poll: the fields follow the filter only when it changes.
      this.#q.value = filter.q;
      this.#agent.value = filter.agent;
      this.#clear.hidden = filter.q === '' && filter.agent === '';
      this.#clear.setAttribute('href', filterHash({ ...filter, q: '', agent: '' }));
    }
    const all = counts.paused + counts.flagged + counts.active;
    for (const [state, tab] of this.#tabs) {
      tab.link.setAttribute('href', filterHash({ ...filter, state }));
      if (filter.state === state) tab.link.setAttribute('aria-current', 'page');
      else tab.link.removeAttribute('aria-current');
      const n = state === null ? all : counts[state];
      setText(tab.count, n.toLocaleString('en'));
      tab.link.classList.toggle('has-some', n > 0);
    }
    this.#prev.disabled = page.number === 1;
    this.#next.disabled = !page.more;
    this.pager.hidden = page.number === 1 && !page.more;
    setText(this.#where, `Page ${page.number}`);
  }
}
