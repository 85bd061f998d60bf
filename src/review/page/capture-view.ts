// A request's capture beside its event (`capture.bodies`): what the agent sent, headers and
// body, and what it got back (the upstream's answer, or trajgate's refusal), secrets redacted
// by the gateway. Bodies are agents' data: text nodes only, in a bounded scrolling box.

import { ApiFailure, call, sessionPath } from './api.js';
import { fill, h } from './dom.js';
import type { CapturedExchange, CapturedPart, EventView } from '../../wire.js';

/** A capture not there yet (written once the request ends) is asked again, this many polls. */
const RETRIES = 5;

export class CaptureView {
  readonly element: HTMLElement;
  #session = '';
  #rid: number | null = null;
  #misses = 0;
  #shown: number | null = null;
  /** The gateway captures (`capture.bodies`); when it does not, nothing is asked. */
  enabled = true;

  constructor() {
    this.element = h('div', {
      class: 'capture',
      attrs: { 'aria-live': 'polite', id: 'capture-view', hidden: '' },
    });
  }

  /** The selected event: its capture, when it is a request the proxy judged. */
  show(session: string, e: EventView | null): void {
    const rid = this.enabled && e && e.source === 'proxy' && e.method ? (e.rid ?? e.seq) : null;
    if (session === this.#session && rid === this.#rid) return;
    this.#session = session;
    this.#rid = rid;
    this.#misses = 0;
    this.#shown = null;
    this.element.hidden = rid === null;
    if (rid === null) return fill(this.element);
    fill(this.element, h('p', { class: 'muted', text: 'Loading the capture…' }));
    void this.#load();
  }

  /** After a poll: a capture still missing may have been written since. */
  refresh(): void {
    if (this.#rid !== null && this.#shown !== this.#rid && this.#misses > 0) {
      if (this.#misses <= RETRIES) void this.#load();
    }
  }

  async #load(): Promise<void> {
    const rid = this.#rid;
    const session = this.#session;
    if (rid === null) return;
    try {
      const { capture } = await call<{ capture: CapturedExchange }>(
        'GET',
        `${sessionPath(session)}/captures/${rid}`,
      );
      if (rid !== this.#rid || session !== this.#session) return;
      this.#shown = rid;
      fill(this.element, ...render(capture));
    } catch (err) {
      if (rid !== this.#rid || session !== this.#session) return;
      this.#misses++;
      const missing = err instanceof ApiFailure && err.status === 404;
      fill(
        this.element,
        h('h3', { class: 'capture-title', text: 'Capture' }),
        h('p', {
          class: 'muted',
          text: missing
            ? 'No capture of this request: capture.bodies is off, or it has not been written yet.'
            : `The capture could not be read: ${err instanceof Error ? err.message : String(err)}`,
        }),
      );
    }
  }
}

function render(c: CapturedExchange): HTMLElement[] {
  const req = c.request;
  const res = c.response;
  return [
    h(
      'h3',
      { class: 'capture-title' },
      'Capture',
      h('span', {
        class: `capture-flag ${c.forwarded ? 'is-forwarded' : 'is-refused'}`,
        text: c.forwarded ? 'forwarded' : 'not forwarded',
      }),
    ),
    h(
      'section',
      { class: 'capture-part', attrs: { 'aria-label': 'Captured request' } },
      h('h4', { class: 'mono capture-line', text: `${req.method} ${req.url}` }),
      ...part(req),
    ),
    res
      ? h(
          'section',
          { class: 'capture-part', attrs: { 'aria-label': 'Captured response' } },
          h('h4', {
            class: 'capture-line',
            text: c.forwarded ? `Response ${res.status}` : `Refusal ${res.status} (from trajgate)`,
          }),
          ...part(res),
        )
      : h('p', { class: 'muted', text: 'No response was captured.' }),
  ];
}

function part(p: CapturedPart): HTMLElement[] {
  const type = p.headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1];
  const facts = [
    type ?? 'no content type',
    `${p.size.toLocaleString('en')} bytes sent`,
    ...(p.decoded ? [`decoded from ${p.decoded.join(', ')}`] : []),
    p.encoding === 'base64' ? 'binary, shown as base64' : 'text',
    ...(p.truncated ? ['truncated at capture.maxBytes'] : []),
  ];
  return [
    h(
      'details',
      { class: 'capture-headers' },
      h('summary', { text: `Headers (${p.headers.length})` }),
      h(
        'table',
        {},
        h(
          'tbody',
          {},
          ...p.headers.map(([name, value]) =>
            h(
              'tr',
              {},
              h('th', { class: 'mono', text: name }),
              h('td', { class: 'mono', text: value }),
            ),
          ),
        ),
      ),
    ),
    p.size === 0 && p.body === ''
      ? h('p', { class: 'muted capture-empty', text: p.truncated ? 'Body not sent.' : 'No body.' })
      : h(
          'div',
          { class: 'capture-body-wrap' },
          h('p', { class: 'capture-facts', text: facts.join(' · ') }),
          h('pre', {
            class: `capture-body mono${p.truncated ? ' is-truncated' : ''}`,
            text: pretty(p, type),
          }),
        ),
  ];
}

/** JSON indented when it is whole JSON; anything else as stored. */
function pretty(p: CapturedPart, type: string | undefined): string {
  if (p.encoding !== 'text' || p.truncated || !/json/i.test(type ?? '')) return p.body;
  try {
    return JSON.stringify(JSON.parse(p.body), null, 2);
  } catch {
    return p.body;
  }
}
