// One session: its trajectory as a timeline (the selected event beside its capture), what
// flags it, the pause record, what is held, the actions, and what allows or denies it.

import { Actions } from './actions.js';
import { topUpSection } from './top-up.js';
import type { ActionsOptions } from './actions.js';
import { call, sessionPath } from './api.js';
import { ApprovalsCard } from './approvals.js';
import { approveOnce, describeHeld } from './approve-once.js';
import { CaptureView } from './capture-view.js';
import { CredentialsCard, exfiltrationRows, unapprovable } from './credentials.js';
import { DeniesCard } from './denies.js';
import { commandLine, ran } from './command.js';
import { resolved } from './resolved.js';
import { ago, clock, clockMs, duration, fill, h, plural, setText, stamp } from './dom.js';
import { ReviewsCard } from './reviews.js';
import { eventLink, pairRows } from './rule-pair.js';
import type { PairLinks } from './rule-pair.js';
import { forgetSuggestions } from './suggest.js';
import { Timeline } from './timeline.js';
import { toolChangeEventRows, toolChangeRows, toolChangeSection } from './tool-change.js';
import type {
  EventAnswer,
  EventRecord,
  EventsPage,
  EventView,
  HandshakeView,
  HeldView,
  SessionDetail,
  SessionState,
} from '../../wire.js';

/** The newest 10,000 events are drawn, fetched in pages of the events route's limit. */
const MAX_EVENTS = 10_000;
const PAGE = 1_000;
/** Pages older than the gateway's index may hold few events: bounded calls per poll. */
const MAX_CALLS = 30;

/**
 * Up to `max` of the session's newest events with a seq above `after`, oldest first. The pages
 * list refused TLS handshakes too: the detail's `handshakes` shows them, the timeline does not.
 */
async function newest(id: string, max: number, after: number): Promise<EventView[]> {
  const got: EventView[] = [];
  let before: number | null = null;
  for (let calls = 0; got.length < max && calls < MAX_CALLS; calls++) {
    const limit = Math.min(PAGE, max - got.length);
    const cursor: string = before === null ? '' : `&before=${before}`;
    const page: EventsPage = await call<EventsPage>(
      'GET',
      `${sessionPath(id)}/events?limit=${limit}${cursor}`,
    );
    const fresh = page.events.filter((e) => e.seq > after);
    for (const e of fresh) if (e.type === 'event') got.push(e);
    if (page.next === null || fresh.length < page.events.length) break;
    before = page.next;
  }
  return got.reverse();
}

export class SessionPage {
  readonly element: HTMLElement;
  readonly actions: Actions;
  readonly timeline: Timeline;
  readonly #reviews: ReviewsCard;
  readonly #credentials: CredentialsCard;
  readonly #capture: CaptureView;
  readonly #approvals: ApprovalsCard;
  readonly #denies: DeniesCard;
  readonly #title: HTMLElement;
  readonly #badge: HTMLElement;
  readonly #meta: HTMLElement;
  readonly #counts: HTMLElement;
  readonly #timelineNote: HTMLElement;
  readonly #details: HTMLElement;
  readonly #pauseTitle: HTMLElement;
  readonly #pauseMeta: HTMLElement;
  readonly #recentBody: HTMLTableSectionElement;
  readonly #handshakeNote: HTMLElement;
  readonly #heldTitle: HTMLElement;
  readonly #heldList: HTMLElement;
  readonly #missing: HTMLElement;
  readonly #body: HTMLElement;
  #id = '';
  #detail: SessionDetail | null = null;
  #fetchedAt = 0;
  #events: EventView[] = [];
  #counted = -1;
  #recentKey = '';
  #heldKey: string | null = null;
  #countsKey = '';
  #autoSelected = false;
  /** An event the route asked for (`#/session/ID/event/SEQ`), selected once loaded. */
  #wanted: number | null = null;
  /** Events not drawn that a pair's link asked the API for, by seq. */
  #looked = new Map<number, EventRecord>();
  readonly #heldRows = new Map<
    number,
    { waited: HTMLElement; left: HTMLElement; bar: HTMLElement }
  >();

  constructor(options: ActionsOptions) {
    this.actions = new Actions(options);
    this.timeline = new Timeline({ onSelect: (e) => this.#onSelect(e) });
    this.#capture = new CaptureView();
    this.#credentials = new CredentialsCard(this.#links);
    this.#reviews = new ReviewsCard({
      show: (e) => this.#select(e),
      approve: (e) => {
        this.#select(e);
        void this.actions.approveFrom(e);
      },
    });
    this.#approvals = new ApprovalsCard(this.actions);
    this.#denies = new DeniesCard(this.actions);

    this.#title = h('h1', { class: 'session-title mono' });
    this.#badge = h('span', { class: 'badge' });
    this.#meta = h('p', { class: 'session-meta' });
    this.#counts = h('div', { class: 'chips' });
    const head = h(
      'div',
      { class: 'view-head session-head' },
      h('a', { class: 'back', attrs: { href: '#/' }, text: '← All sessions' }),
      h('div', { class: 'title-row' }, this.#title, this.#badge),
      h('div', { class: 'meta-row' }, this.#meta, this.#counts),
    );

    // Timeline
    const mode = (value: 'time' | 'order', label: string, pressed: boolean) =>
      h('button', {
        class: 'seg',
        text: label,
        attrs: { type: 'button', 'aria-pressed': String(pressed), 'data-mode': value },
        on: {
          click: (e) => {
            for (const b of (e.currentTarget as HTMLElement).parentElement?.children ?? [])
              b.setAttribute('aria-pressed', String(b === e.currentTarget));
            this.timeline.setMode(value);
          },
        },
      });
    const tool = (label: string, title: string, fn: () => void) =>
      h('button', {
        class: 'btn btn-small',
        text: label,
        attrs: { type: 'button', title, 'aria-label': title },
        on: { click: fn },
      });
    this.#timelineNote = h('span', { class: 'timeline-note' });
    this.#details = h('div', {
      class: 'event-details',
      attrs: { 'aria-live': 'polite', id: 'event-details' },
    });
    const timelineCard = h(
      'section',
      { class: 'card timeline-card', attrs: { 'aria-labelledby': 'timeline-title' } },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { attrs: { id: 'timeline-title' }, text: 'Trajectory' }),
        legend(),
        h(
          'div',
          { class: 'card-tools' },
          h(
            'div',
            { class: 'segmented', attrs: { role: 'group', 'aria-label': 'Horizontal axis' } },
            mode('time', 'Time', true),
            mode('order', 'Order', false),
          ),
          tool('−', 'Zoom out', () => this.timeline.zoom(2)),
          tool('+', 'Zoom in', () => this.timeline.zoom(0.5)),
          tool('Fit', 'Show all events', () => this.timeline.fit()),
        ),
      ),
      this.timeline.element,
      h(
        'p',
        { class: 'help timeline-help', attrs: { id: 'timeline-help' } },
        'Hover or click an event on the timeline to see it; with the timeline focused, ← → select events, + − zoom, 0 fits. Drag to pan when zoomed. ',
        this.#timelineNote,
      ),
      this.#details,
    );

    // Pause record
    this.#pauseTitle = h('h2', { attrs: { id: 'pause-title' }, text: 'Pause record' });
    this.#pauseMeta = h('div', { class: 'pause-meta' });
    this.#recentBody = h('tbody');
    this.#handshakeNote = h('p', { class: 'notice handshake-note', attrs: { hidden: '' } });
    const th = (text: string, cls = '') => h('th', { attrs: { scope: 'col' }, class: cls, text });
    const pauseCard = h(
      'section',
      { class: 'card pause-card', attrs: { 'aria-labelledby': 'pause-title' } },
      h('div', { class: 'card-head' }, this.#pauseTitle),
      this.#pauseMeta,
      this.#handshakeNote,
      h(
        'div',
        { class: 'table-scroll' },
        h(
          'table',
          { class: 'events' },
          h('caption', { class: 'visually-hidden', text: 'Recent events, oldest first' }),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              th('#', 'col-seq'),
              th('Time', 'col-time'),
              th('Kind', 'col-kind'),
              th('Verdict', 'col-verdict'),
              th('Target and reason', 'col-what'),
            ),
          ),
          this.#recentBody,
        ),
      ),
    );

    // Held requests and approvals
    this.#heldTitle = h('h2', { attrs: { id: 'held-title' }, text: 'Held requests' });
    this.#heldList = h('ul', { class: 'held-list' });
    const heldCard = h(
      'section',
      { class: 'card held-card', attrs: { 'aria-labelledby': 'held-title' } },
      this.#heldTitle,
      this.#heldList,
    );

    this.#missing = h('div', { class: 'card empty', attrs: { hidden: '' } });
    this.#body = h(
      'div',
      { class: 'session-grid' },
      h(
        'div',
        { class: 'session-main' },
        timelineCard,
        this.#reviews.element,
        pauseCard,
        this.#credentials.element,
      ),
      h(
        'aside',
        { class: 'session-side', attrs: { 'aria-label': 'Held requests and actions' } },
        heldCard,
        this.actions.element,
        this.#approvals.element,
        this.#denies.element,
      ),
    );
    this.element = h('section', { class: 'view view-session' }, head, this.#missing, this.#body);
  }

  get id(): string {
    return this.#id;
  }

  /** Shows another session: forgets the previous one's data. */
  show(id: string): void {
    this.#id = id;
    this.#detail = null;
    this.#events = [];
    this.#counted = -1;
    this.#recentKey = this.#countsKey = '';
    this.#heldKey = null;
    this.#autoSelected = false;
    this.#wanted = null;
    this.#looked.clear();
    this.#heldRows.clear();
    setText(this.#title, id);
    setText(this.#meta, 'Loading…');
    this.#badge.className = 'badge';
    setText(this.#badge, '');
    fill(this.#counts);
    fill(this.#heldList);
    forgetSuggestions();
    this.#approvals.clear();
    this.#reviews.clear();
    this.#credentials.clear();
    this.#denies.show(id);
    fill(this.#recentBody);
    fill(this.#pauseMeta);
    this.#missing.hidden = true;
    this.#body.hidden = false;
    this.actions.show(id);
    this.#onSelect(null);
    this.timeline.setEvents([], null);
    document.title = `${id} · trajgate review`;
  }

  /** Selects event `seq` (the route named it): now if loaded, else once it is. */
  focus(seq: number): void {
    if (this.#counted < 0) {
      this.#wanted = seq;
      this.#autoSelected = true;
    } else void this.#selectSeq(seq);
  }

  /** The session was not found (404): says so instead of showing stale data. */
  missing(message: string): void {
    this.#body.hidden = true;
    this.#missing.hidden = false;
    setText(this.#meta, '');
    fill(
      this.#missing,
      h('p', { class: 'empty-title', text: 'No such session' }),
      h('p', { text: message }),
      h('p', {}, h('a', { attrs: { href: '#/' }, text: 'Back to all sessions' })),
    );
  }

  /** Fetches the detail and, when the session has new events, the new events. */
  async load(): Promise<void> {
    const id = this.#id;
    const detail = await call<SessionDetail>('GET', sessionPath(id));
    const delta = detail.events - this.#counted;
    let events = this.#events;
    if (this.#counted < 0 || delta < 0 || delta > MAX_EVENTS) {
      events = await newest(id, MAX_EVENTS, -1);
    } else if (delta > 0) {
      events = events.concat(await newest(id, delta, events.at(-1)?.seq ?? -1));
      if (events.length > MAX_EVENTS) events = events.slice(events.length - MAX_EVENTS);
    }
    if (id !== this.#id) return; // the operator moved on meanwhile
    this.#fetchedAt = Date.now();
    const eventsChanged = events !== this.#events || this.#counted < 0;
    this.#counted = detail.events;
    this.#events = events;
    this.#detail = detail;
    this.#missing.hidden = true;
    this.#body.hidden = false;
    this.#render(detail, eventsChanged);
  }

  /** The API is down (or back): actions are disabled while it is. */
  setDown(down: boolean): void {
    this.element.classList.toggle('is-stale', down);
    const d = this.#detail;
    this.actions.update(d?.state === 'paused', d?.heldRequests.length ?? 0, down);
    this.#denies.setDisabled(down);
  }

  /** Every second: the held requests' clocks move on between polls. */
  tick(): void {
    const d = this.#detail;
    if (!d) return;
    const elapsed = Date.now() - this.#fetchedAt;
    for (const held of d.heldRequests) {
      const row = this.#heldRows.get(held.id);
      if (!row) continue;
      const waited = held.waitedMs + elapsed;
      const left = Math.max(0, held.timeoutInMs - elapsed);
      setText(row.waited, `waited ${duration(waited)}`);
      setText(row.left, left > 0 ? `times out in ${duration(left)}` : 'timing out');
      row.bar.style.width = `${Math.min(100, (waited / Math.max(1, waited + left)) * 100).toFixed(1)}%`;
    }
    if (d.lastActivity) this.#renderMeta(d);
  }

  #render(d: SessionDetail, eventsChanged: boolean): void {
    const paused = d.state === 'paused';
    this.#capture.enabled = d.captures !== false;
    this.element.classList.toggle('is-paused', paused);
    this.element.classList.toggle('is-flagged', d.state === 'flagged');
    this.#badge.className = `${BADGE[d.state] ?? BADGE.active} badge-lg`;
    setText(this.#badge, STATE_NAME[d.state] ?? 'Active');
    this.#renderMeta(d);
    const counts = Object.entries(d.counts).sort(([a], [b]) => a.localeCompare(b));
    const countsKey = JSON.stringify(counts);
    if (countsKey !== this.#countsKey) {
      this.#countsKey = countsKey;
      fill(
        this.#counts,
        ...counts.map(([b, n]) =>
          h(
            'span',
            { class: `chip${paused && b === d.pausedBy ? ' chip-pause' : ''}` },
            h('span', { class: 'chip-name', text: b }),
            h('span', { class: 'chip-count', text: String(n) }),
          ),
        ),
      );
    }

    if (eventsChanged) {
      const trigger = d.pause?.trigger ?? null;
      this.timeline.setEvents(this.#events, trigger ? { seq: trigger.seq, ts: trigger.ts } : null);
      const total = d.events;
      setText(
        this.#timelineNote,
        total > this.#events.length
          ? `Showing the newest ${this.#events.length.toLocaleString('en')} of ${total.toLocaleString('en')} events.`
          : `${plural(total, 'event')}.`,
      );
      if (this.#wanted !== null) {
        void this.#selectSeq(this.#wanted);
        this.#wanted = null;
      } else if (!this.#autoSelected && this.#events.length > 0) {
        this.#autoSelected = true;
        // Start where the operator is needed: the pause trigger, else the latest non-ALLOW.
        const pick =
          trigger?.seq ?? [...this.#events].reverse().find((e) => e.verdict !== 'ALLOW')?.seq;
        if (pick !== undefined) this.timeline.selectSeq(pick);
      }
    }

    this.#renderPause(d);
    this.#renderHeld(d.heldRequests, !unapprovable(d.pause));
    this.#reviews.update(d.reviews ?? [], d.flagged ?? 0, paused);
    this.#credentials.update(d.credentials ?? []);
    this.#approvals.update(d.approvals, d.allowlist);
    this.#denies.update(d.denies);
    this.#denies.setDisabled(false);
    this.#capture.refresh();
    this.actions.update(paused, d.heldRequests.length, false);
    this.tick();
  }

  #renderMeta(d: SessionDetail): void {
    const parts =
      d.state === 'paused' && d.pausedAt
        ? [`paused ${ago(d.pausedAt)} on ${d.pausedBy ?? 'a held request'}`]
        : [];
    parts.push(plural(d.events, 'event'), `last activity ${ago(d.lastActivity)}`);
    setText(this.#meta, parts.join(' · '));
  }

  #renderPause(d: SessionDetail): void {
    const p = d.pause;
    const rows = p ? p.recent : d.recent;
    const refused = d.handshakes.recent;
    setText(this.#pauseTitle, p ? 'Pause record' : 'Recent events');
    const key = JSON.stringify([
      p?.pausedAt ?? null,
      p?.restored ?? null,
      rows.map((e) => e.seq),
      refused.map((x) => x.seq),
    ]);
    if (key === this.#recentKey) return;
    this.#recentKey = key;
    if (p) {
      fill(
        this.#pauseMeta,
        h(
          'dl',
          { class: 'facts' },
          h('dt', { text: 'Paused at' }),
          h('dd', { text: stamp(p.pausedAt) }),
          h('dt', { text: 'Boundary' }),
          h('dd', {
            // A rule's name stands where a boundary would; its count is the crossing's.
            text: p.trigger.rule
              ? p.boundary === 'budget'
                ? `budget ${p.trigger.rule.name}`
                : `${p.boundary ?? '—'} (a trajectory rule)`
              : `${p.boundary ?? '—'} (count ${p.count})`,
          }),
          h('dt', { text: 'Reason' }),
          h('dd', { text: p.reason }),
          h('dt', { text: 'Trigger' }),
          h(
            'dd',
            { class: 'mono' },
            p.trigger.rule ? eventLink(this.#links, p.trigger.seq) : '',
            p.trigger.rule ? ' ' : '',
            p.trigger.method ? `${p.trigger.method} ` : '',
            p.trigger.target,
            p.trigger.command === undefined ? '' : ` ${ran(p.trigger)}`,
          ),
          ...pairRows(p.trigger, this.#links, factRow),
          ...exfiltrationRows(p, this.#links, factRow),
          ...toolChangeRows(p, factRow),
        ),
        toolChangeSection(p, this.actions),
        topUpSection(d, this.actions),
        p.restored
          ? h('p', {
              class: 'notice',
              text: 'Restored after a restart: the requests held then were lost with the old process.',
            })
          : null,
      );
    } else {
      fill(
        this.#pauseMeta,
        h('p', {
          class: 'help',
          text: 'The session is not paused. Its latest events, oldest first:',
        }),
      );
    }
    const trigger = p?.trigger.seq;
    const earlier = p?.trigger.rule?.after;
    const n = d.handshakes.refused;
    this.#handshakeNote.hidden = n === 0;
    setText(
      this.#handshakeNote,
      n === 0 ? '' : `${plural(n, 'TLS handshake')} refused by the agent: ${refused.at(-1)?.hint}`,
    );
    // Refused handshakes are no events: listed among them by seq, never on the timeline.
    const listed = [
      ...rows.map((e) => ({
        seq: e.seq,
        row: () => this.#eventRow(e, e.seq === trigger, e.seq === earlier),
      })),
      ...refused.map((x) => ({ seq: x.seq, row: () => handshakeRow(x) })),
    ].sort((a, b) => a.seq - b.seq);
    fill(
      this.#recentBody,
      ...(listed.length === 0
        ? [
            h(
              'tr',
              {},
              h('td', { class: 'muted', attrs: { colspan: '5' }, text: 'No events yet.' }),
            ),
          ]
        : listed.map((x) => x.row())),
    );
  }

  #eventRow(e: EventView, isTrigger: boolean, isEarlier: boolean): HTMLTableRowElement {
    const cls = isTrigger ? 'is-trigger' : isEarlier ? 'is-earlier' : '';
    const tr = h(
      'tr',
      { class: cls, attrs: { tabindex: '0', 'data-seq': String(e.seq) } },
      h('td', { class: 'col-seq mono', text: String(e.seq) }),
      h('td', { class: 'col-time mono', text: clockMs(e.ts), attrs: { title: stamp(e.ts) } }),
      h('td', { class: 'col-kind', text: e.kind }),
      h(
        'td',
        { class: 'col-verdict' },
        verdictBadge(e.verdict),
        e.held ? h('span', { class: 'flag', text: 'held' }) : null,
      ),
      h(
        'td',
        { class: 'col-what' },
        h(
          'div',
          { class: 'col-target mono' },
          e.method ? h('span', { class: 'method', text: e.method }) : null,
          e.target,
          resolved(e) === null ? null : ` → ${resolved(e)}`,
        ),
        e.command === undefined ? null : h('div', { class: 'col-command mono', text: ran(e) }),
        h('div', { class: 'col-reason', text: e.reason }),
      ),
    );
    const pick = () => this.timeline.selectSeq(e.seq);
    tr.addEventListener('click', pick);
    tr.addEventListener('keydown', (k) => {
      if (k.key === 'Enter' || k.key === ' ') {
        k.preventDefault();
        pick();
      }
    });
    tr.title = 'Select on the timeline';
    return tr;
  }

  /** `approvable`: false on a pause no approval may decide (trajgate's own boundaries). */
  #renderHeld(held: readonly HeldView[], approvable: boolean): void {
    setText(this.#heldTitle, held.length ? `Held requests (${held.length})` : 'Held requests');
    const key = `${approvable}:${held.map((x) => x.id).join(',')}`;
    if (key === this.#heldKey) return;
    this.#heldKey = key;
    this.#heldRows.clear();
    if (held.length === 0) {
      fill(this.#heldList, h('li', { class: 'muted', text: 'Nothing is held.' }));
      return;
    }
    fill(
      this.#heldList,
      ...held.map((x) => {
        const waited = h('span');
        const left = h('span');
        const bar = h('span', { class: 'bar-fill' });
        this.#heldRows.set(x.id, { waited, left, bar });
        return h(
          'li',
          { class: 'held' },
          h('div', { class: 'held-what mono', text: describeHeld(x) }),
          h('div', { class: 'held-times' }, waited, left),
          h('div', { class: 'bar', attrs: { 'aria-hidden': 'true' } }, bar),
          h('div', {
            class: 'held-since',
            text: `#${x.rid} since ${clock(x.since)}, deadline ${clock(x.deadline)}`,
          }),
          ...(approvable
            ? [
                h('button', {
                  class: 'btn btn-go held-once',
                  text: 'Approve once',
                  attrs: { type: 'button', 'data-rid': String(x.rid) },
                  on: { click: () => void approveOnce(this.actions, this.#id, x, held) },
                }),
                h('button', {
                  class: 'btn held-once-reset',
                  text: 'Approve once and reset counts',
                  attrs: { type: 'button', 'data-rid': String(x.rid) },
                  on: { click: () => void approveOnce(this.actions, this.#id, x, held, true) },
                }),
              ]
            : []),
        );
      }),
    );
  }

  /** The event detail's and pause record's links between the two events of a rule's pair. */
  readonly #links: PairLinks = {
    session: () => this.#id,
    lookup: (seq) => this.#lookup(seq),
    laterOf: (seq) => this.#events.filter((x) => x.rule?.after === seq),
    pick: (seq) => void this.#selectSeq(seq),
  };

  /** An event by seq: drawn, in the pause record, looked up before, or asked of the API. */
  async #lookup(seq: number): Promise<EventRecord | undefined> {
    const id = this.#id;
    const pause = this.#detail?.pause;
    const bySeq = (e: EventRecord) => e.seq === seq;
    const known =
      this.#events.find(bySeq) ??
      (pause?.after?.seq === seq ? pause.after : pause?.recent.find(bySeq)) ??
      this.#looked.get(seq);
    if (known) return known;
    try {
      const { event } = await call<EventAnswer>('GET', `/api/events/${seq}`);
      if (event.session !== id || id !== this.#id) return undefined;
      if (this.#looked.size >= 100) this.#looked.clear();
      this.#looked.set(seq, event);
      return event;
    } catch {
      return undefined; // gone from the index, or the API is down: the link stays a link
    }
  }

  async #selectSeq(seq: number): Promise<void> {
    const e = await this.#lookup(seq);
    if (e && e.session === this.#id) this.#select(e);
  }

  /** Selects an event on the timeline, or shows it alone when it is older than those drawn. */
  #select(e: EventView): void {
    if (this.#events.some((x) => x.seq === e.seq)) this.timeline.selectSeq(e.seq);
    else this.#onSelect(e);
    this.#details.scrollIntoView({ block: 'nearest' });
  }

  #onSelect(e: EventView | null): void {
    void this.actions.prefill(e);
    void this.#denies.prefill(e);
    this.#capture.show(this.#id, e);
    for (const row of this.#recentBody.querySelectorAll('tr.is-selected'))
      row.classList.remove('is-selected');
    if (e) this.#recentBody.querySelector(`tr[data-seq="${e.seq}"]`)?.classList.add('is-selected');
    if (!e) {
      fill(
        this.#details,
        h('p', {
          class: 'details-empty',
          text: 'No event selected. Click one on the timeline, or focus it and use the arrow keys.',
        }),
      );
      return;
    }
    const row = (k: string, ...v: (Node | string)[]) => [h('dt', { text: k }), h('dd', {}, ...v)];
    fill(
      this.#details,
      h(
        'dl',
        { class: 'details' },
        ...row(
          'Event',
          `#${e.seq} · ${stamp(e.ts)}.${String(new Date(e.ts).getMilliseconds()).padStart(3, '0')}`,
        ),
        ...row(
          'Verdict',
          verdictBadge(e.verdict),
          e.rule ? ` ${e.rule.name}` : e.boundary ? ` ${e.boundary} · count ${e.count}` : '',
          e.approved ? ` · approved${e.approvedBy ? ` by ${e.approvedBy}` : ''}` : '',
          e.held ? ' · held while paused' : '',
        ),
        ...row('Kind', `${e.kind} (via ${e.source})`),
        ...row('Target', h('span', { class: 'mono target', text: e.target })),
        ...(resolved(e) === null
          ? []
          : row('Resolved', h('span', { class: 'mono resolved', text: resolved(e) as string }))),
        ...(e.command === undefined ? [] : row('Command', ...commandLine(e))),
        ...row('Method', e.method ?? '—'),
        ...row('Status', e.status != null ? String(e.status) : 'not recorded'),
        ...row('Reason', e.reason),
        ...pairRows(e, this.#links, row),
        ...(e.denied ? row('Refused', e.denied) : []),
        ...toolChangeEventRows(e, row),
      ),
      this.#capture.element,
    );
  }
}

const BADGE: Record<SessionState, string> = {
  active: 'badge badge-active',
  flagged: 'badge badge-flag',
  paused: 'badge badge-pause',
};
const STATE_NAME: Record<SessionState, string> = {
  active: 'Active',
  flagged: 'Flagged',
  paused: 'Paused',
};

/** A TLS handshake the agent refused, in the events list: what, why, and what to do. */
function handshakeRow(x: HandshakeView): HTMLTableRowElement {
  return h(
    'tr',
    { class: 'is-refused', attrs: { 'data-seq': String(x.seq) } },
    h('td', { class: 'col-seq mono', text: String(x.seq) }),
    h('td', { class: 'col-time mono', text: clockMs(x.ts), attrs: { title: stamp(x.ts) } }),
    h('td', { class: 'col-kind', text: 'tls' }),
    h('td', { class: 'col-verdict' }, verdictBadge('REFUSED')),
    h(
      'td',
      { class: 'col-what' },
      h('div', { class: 'col-target mono', text: x.target }),
      h('div', { class: 'col-reason', text: `${x.reason} (${x.handshake})` }),
      h('div', { class: 'col-hint', text: x.hint }),
    ),
  );
}

/** A fact of the pause record: its name and value. */
const factRow = (k: string, ...v: (Node | string)[]) => [h('dt', { text: k }), h('dd', {}, ...v)];

function verdictBadge(v: string): HTMLElement {
  return h('span', { class: `verdict verdict-${v.toLowerCase()}`, text: v });
}

function legend(): HTMLElement {
  const item = (cls: string, label: string) =>
    h('li', {}, h('span', { class: `swatch ${cls}`, attrs: { 'aria-hidden': 'true' } }), label);
  return h(
    'ul',
    { class: 'legend', attrs: { 'aria-label': 'Legend' } },
    item('swatch-allow', 'ALLOW'),
    item('swatch-review', 'REVIEW'),
    item('swatch-pause', 'PAUSE'),
    item('swatch-held', 'held'),
    item('swatch-paused', 'pause point'),
    item('swatch-pair', 'rule pair'),
  );
}
