// Deny patterns: refused whatever allows or approves them. The card lists those that apply to
// the session (its own, global ones, the config's network.deny), revokes an operator's, and
// adds one for this session or every session (pre-filled from the selected request).

import type { Actions } from './actions.js';
import { confirmAction } from './confirm.js';
import { call, sessionPath } from './api.js';
import { fill, h } from './dom.js';
import { suggestion } from './suggest.js';
import type { DenyView, EventView } from '../../wire.js';

export class DeniesCard {
  readonly element: HTMLElement;
  readonly #list: HTMLElement;
  readonly #pattern: HTMLInputElement;
  readonly #add: HTMLButtonElement;
  readonly #everyone: HTMLInputElement;
  readonly #actions: Actions;
  #session = '';
  #key = '';
  #prefilled: number | null = null;
  #typed = false;

  constructor(actions: Actions) {
    this.#actions = actions;
    this.#list = h('ul', {
      class: 'approval-list deny-list',
      attrs: { 'aria-label': 'Deny patterns' },
    });
    this.#pattern = h('input', {
      class: 'mono',
      attrs: {
        id: 'deny-pattern',
        name: 'deny-pattern',
        type: 'text',
        autocomplete: 'off',
        spellcheck: 'false',
        placeholder: 'host, METHOD https://host/path',
        'aria-describedby': 'deny-help',
      },
      on: { input: () => (this.#typed = true) },
    });
    this.#everyone = h('input', { attrs: { id: 'deny-everyone', type: 'checkbox' } });
    this.#add = h('button', {
      class: 'btn btn-danger',
      text: 'Add deny pattern…',
      attrs: { type: 'submit' },
    });
    const form = h(
      'form',
      { class: 'action-deny', attrs: { novalidate: '' } },
      h(
        'div',
        { class: 'field' },
        h('label', { text: 'Deny pattern', attrs: { for: 'deny-pattern' } }),
        this.#pattern,
      ),
      h('p', {
        class: 'help',
        attrs: { id: 'deny-help' },
        text: 'Refused whatever allows or approves it; journaled like an approval.',
      }),
      h('label', { class: 'check' }, this.#everyone, ' For every session, not only this one'),
      h('div', { class: 'btn-row' }, this.#add),
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.#onAdd();
    });
    this.element = h(
      'section',
      { class: 'card denies-card', attrs: { 'aria-labelledby': 'denies-title' } },
      h('h2', { attrs: { id: 'denies-title' }, text: 'Deny patterns' }),
      this.#list,
      form,
    );
  }

  show(session: string): void {
    this.#session = session;
    this.#key = '';
    this.#prefilled = null;
    this.#pattern.value = '';
    fill(this.#list);
  }

  setDisabled(disabled: boolean): void {
    this.#add.disabled = disabled;
  }

  update(denies: readonly DenyView[] | undefined): void {
    const key = JSON.stringify(denies ?? null);
    if (key === this.#key) return;
    this.#key = key;
    const rank = (d: DenyView) => (d.origin === 'config' ? 2 : d.session === null ? 1 : 0);
    const sorted = [...(denies ?? [])].sort((a, b) => rank(a) - rank(b));
    fill(
      this.#list,
      ...(denies === undefined
        ? [h('li', { class: 'muted', text: 'Not reported by this gateway.' })]
        : sorted.length === 0
          ? [h('li', { class: 'muted', text: 'None: nothing is denied outright.' })]
          : sorted.map((d) => this.#item(d))),
    );
  }

  /** A network event was selected: propose a deny pattern for what it asked for. */
  async prefill(event: EventView | null): Promise<void> {
    if (!event || event.kind !== 'network' || event.seq === this.#prefilled) return;
    const seq = event.seq;
    this.#prefilled = seq;
    this.#typed = false;
    try {
      const s = await suggestion(seq);
      if (this.#prefilled === seq && !this.#typed) this.#pattern.value = s.pattern;
    } catch {
      // The approve form says why there is no suggestion.
    }
  }

  #item(d: DenyView): HTMLElement {
    const config = d.origin === 'config';
    const scope = config
      ? `config: ${d.source ?? 'network.deny'}`
      : d.session === null
        ? 'all sessions'
        : 'this session';
    return h(
      'li',
      { class: 'approval deny', attrs: { 'data-id': d.id ?? '' } },
      h(
        'div',
        { class: 'approval-text' },
        h('span', { class: 'approval-pattern mono', text: d.pattern }),
        h(
          'span',
          { class: 'approval-meta' },
          scope,
          d.by ? ` · by ${d.by}` : '',
          d.id ? h('span', { class: 'approval-id mono', text: d.id }) : null,
        ),
      ),
      config || !d.id
        ? null
        : h('button', {
            class: 'btn btn-small btn-danger',
            text: 'Revoke…',
            attrs: { type: 'button', 'aria-label': `Revoke deny pattern ${d.id}: ${d.pattern}` },
            on: { click: () => void this.#revoke(d, scope) },
          }),
    );
  }

  async #onAdd(): Promise<void> {
    const pattern = this.#pattern.value.trim();
    if (pattern === '') {
      this.#actions.say('Enter a pattern to deny.', 'error');
      this.#pattern.focus();
      return;
    }
    const session = this.#session;
    const everyone = this.#everyone.checked;
    const ok = await confirmAction({
      title: 'Add this deny pattern?',
      lines: [
        ['Session', everyone ? 'every session' : session],
        ['Deny pattern', pattern],
      ],
      note: `Matching requests of ${everyone ? 'every session' : 'this session'} are refused from now on, even if allowed or approved (and counted as crossings).`,
      confirm: 'Add',
      tone: 'danger',
    });
    if (!ok) return;
    await this.#actions.run(async () => {
      const path = everyone ? '/api/denies' : `${sessionPath(session)}/denies`;
      const { deny } = await call<{ deny: DenyView }>('POST', path, { pattern });
      this.#everyone.checked = false;
      return `Added deny pattern ${deny.pattern} for ${deny.session === null ? 'all sessions' : 'this session'} (${deny.id}).`;
    });
  }

  async #revoke(d: DenyView, scope: string): Promise<void> {
    const ok = await confirmAction({
      title: 'Revoke this deny pattern?',
      lines: [
        ['Deny pattern', d.id],
        ['Pattern', d.pattern],
        ['Applies to', scope],
      ],
      note: 'Matching requests are judged by the allowlist and approvals again.',
      confirm: 'Revoke',
      tone: 'danger',
    });
    if (!ok) return;
    await this.#actions.run(async () => {
      const r = await call<{ revoked: DenyView }>(
        'DELETE',
        `/api/denies/${encodeURIComponent(d.id)}`,
      );
      return `Revoked deny pattern ${r.revoked.id} (${r.revoked.pattern}).`;
    });
  }
}
