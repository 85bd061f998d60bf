// Credentials on the session page: which ones the session's traffic carried and where (a card
// beside the pause record), and on a pause for a sentinel out of place, which credential, where
// it was found and the event that first carried it, beside the trigger. Such a pause is never
// approvable: no approval covers trajgate's own boundaries.

import { fill, h, plural, stamp } from './dom.js';
import { asked, eventLink } from './rule-pair.js';
import type { PairLinks } from './rule-pair.js';
import type { CredentialUseView, PauseRecord } from '../../wire.js';

/**
 * event/own-boundaries.ts OWN_BOUNDARIES: pauses no approval, once or standing, may decide
 * (`tool-changed` is let go by pinning the new list: tool-change.ts).
 */
const OWN_BOUNDARIES = new Set(['trajgate-files', 'credential-exfiltration', 'tool-changed']);

/** Whether the pause is on one of trajgate's own boundaries (no approve buttons for it). */
export const unapprovable = (p: PauseRecord | null): boolean =>
  p !== null && OWN_BOUNDARIES.has(p.boundary ?? '');

type Row = (name: string, ...value: (Node | string)[]) => HTMLElement[];

/** The pause record's rows for a sentinel out of place: the credential, where, first carried. */
export function exfiltrationRows(p: PauseRecord, links: PairLinks, row: Row): HTMLElement[] {
  const out = p.trigger.exfiltration;
  if (out === undefined) return [];
  const first = p.firstSeen;
  return [
    ...row('Credential', h('strong', { class: 'credential-name', text: out.credential })),
    ...row('Found in', out.where),
    ...row(
      'First carried',
      ...(first
        ? [eventLink(links, first.seq), h('span', { class: 'mono', text: ` ${asked(first)}` })]
        : ['not by this session (handed to the agent some other way)']),
    ),
    ...row('Approval', 'none can cover it: deny, or resume once the agent is fixed'),
  ];
}

/** The credentials a session carried: uses, hosts, exfiltrations, the first event. */
export class CredentialsCard {
  readonly element: HTMLElement;
  readonly #body: HTMLElement;
  readonly #links: PairLinks;
  #key = '';

  constructor(links: PairLinks) {
    this.#links = links;
    this.#body = h('tbody');
    const th = (text: string) => h('th', { attrs: { scope: 'col' }, text });
    this.element = h(
      'section',
      {
        class: 'card credentials-card',
        attrs: { 'aria-labelledby': 'credentials-title', hidden: '' },
      },
      h('h2', { attrs: { id: 'credentials-title' }, text: 'Credentials' }),
      h('p', {
        class: 'help',
        text: 'Credentials whose sentinels this session sent: to their own hosts (swapped for the value there), or out of place.',
      }),
      h(
        'div',
        { class: 'table-scroll' },
        h(
          'table',
          { class: 'credentials' },
          h(
            'thead',
            {},
            h('tr', {}, th('Name'), th('Uses'), th('Hosts'), th('Out of place'), th('First')),
          ),
          this.#body,
        ),
      ),
    );
  }

  clear(): void {
    this.#key = '';
    this.element.hidden = true;
    fill(this.#body);
  }

  update(list: readonly CredentialUseView[]): void {
    const key = JSON.stringify(list);
    if (key === this.#key) return;
    this.#key = key;
    this.element.hidden = list.length === 0;
    fill(this.#body, ...list.map((c) => this.#row(c)));
  }

  #row(c: CredentialUseView): HTMLElement {
    return h(
      'tr',
      { class: c.exfiltrations > 0 ? 'is-exfiltrated' : '', attrs: { 'data-name': c.name } },
      h('td', { class: 'mono', text: c.name }),
      h('td', { text: String(c.uses) }),
      h('td', { class: 'mono', text: c.hosts.join(', ') || '—' }),
      h('td', { text: c.exfiltrations > 0 ? plural(c.exfiltrations, 'event') : 'none' }),
      h(
        'td',
        { attrs: { title: stamp(c.first.ts) } },
        eventLink(this.#links, c.first.seq),
        h('span', { class: 'mono', text: ` ${asked(c.first)}` }),
      ),
    );
  }
}
