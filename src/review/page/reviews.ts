// The REVIEW events that flag a session (refused once; a second crossing pauses it), each with
// the way to act on it from here: show it on the timeline (with its capture), or approve the
// pattern the gateway suggests for it.

import { clock, fill, h, plural, stamp } from './dom.js';
import type { EventView } from '../../wire.js';

export interface ReviewsOptions {
  show(event: EventView): void;
  approve(event: EventView): void;
}

export class ReviewsCard {
  readonly element: HTMLElement;
  readonly #summary: HTMLElement;
  readonly #list: HTMLElement;
  readonly #options: ReviewsOptions;
  #key = '';

  constructor(options: ReviewsOptions) {
    this.#options = options;
    this.#summary = h('p', { class: 'help' });
    this.#list = h('ul', { class: 'review-list' });
    this.element = h(
      'section',
      { class: 'card reviews-card', attrs: { 'aria-labelledby': 'reviews-title', hidden: '' } },
      h('h2', { attrs: { id: 'reviews-title' }, text: 'Flagged: REVIEW verdicts' }),
      this.#summary,
      this.#list,
    );
  }

  clear(): void {
    this.#key = '';
    this.element.hidden = true;
    fill(this.#list);
  }

  /** `reviews` oldest first; `flagged` how many there are in all (the list keeps the newest). */
  update(reviews: readonly EventView[], flagged: number, paused: boolean): void {
    const key = JSON.stringify([reviews.map((e) => e.seq), flagged, paused]);
    if (key === this.#key) return;
    this.#key = key;
    this.element.hidden = reviews.length === 0;
    fill(
      this.#summary,
      `${plural(Math.max(flagged, reviews.length), 'REVIEW')} since the last operator action. `,
      paused
        ? 'The session is paused as well: decide on the held requests too.'
        : 'Each was refused; crossing the same boundary again pauses the session. Approve what the agent needs, or add a deny pattern.',
    );
    fill(this.#list, ...[...reviews].reverse().map((e) => this.#item(e)));
  }

  #item(e: EventView): HTMLElement {
    return h(
      'li',
      { class: 'review', attrs: { 'data-seq': String(e.seq) } },
      h(
        'div',
        { class: 'review-text' },
        h(
          'span',
          { class: 'review-what mono' },
          e.method ? h('span', { class: 'method', text: e.method }) : null,
          e.target,
        ),
        h(
          'span',
          { class: 'review-meta' },
          h('span', { text: `#${e.seq} · ${clock(e.ts)}`, attrs: { title: stamp(e.ts) } }),
          ` · ${e.boundary ?? e.kind} · ${e.reason}`,
        ),
      ),
      h(
        'div',
        { class: 'btn-row' },
        h('button', {
          class: 'btn btn-small',
          text: 'Show',
          attrs: { type: 'button', 'aria-label': `Show event #${e.seq}` },
          on: { click: () => this.#options.show(e) },
        }),
        h('button', {
          class: 'btn btn-small btn-primary',
          text: 'Approve…',
          attrs: { type: 'button', 'aria-label': `Approve what event #${e.seq} asked for` },
          on: { click: () => this.#options.approve(e) },
        }),
      ),
    );
  }
}
