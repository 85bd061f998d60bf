// What lets a session's requests through: approvals in force (an operator's can be revoked
// here; the config's cannot: they change with the config) and the config allowlist that
// applies to the session (network.allow plus its agent's and roles' allow).

import type { Actions } from './actions.js';
import { confirmAction } from './confirm.js';
import { call } from './api.js';
import { clock, fill, h } from './dom.js';
import type { ApprovalView } from '../../wire.js';

export class ApprovalsCard {
  readonly element: HTMLElement;
  readonly #list: HTMLElement;
  readonly #allowlist: HTMLElement;
  readonly #actions: Actions;
  #key = '';

  constructor(actions: Actions) {
    this.#actions = actions;
    this.#list = h('ul', { class: 'approval-list', attrs: { 'aria-label': 'Approvals' } });
    this.#allowlist = h('ul', { class: 'allow-list', attrs: { 'aria-label': 'Allowlist' } });
    this.element = h(
      'section',
      { class: 'card approvals-card', attrs: { 'aria-labelledby': 'approvals-title' } },
      h('h2', { attrs: { id: 'approvals-title' }, text: 'Approvals in force' }),
      this.#list,
      h('h3', { class: 'allow-title', text: 'Allowlist for this session (config)' }),
      this.#allowlist,
      h('p', {
        class: 'help',
        text: 'network.allow plus this agent’s and its roles’ allow. Change it in the config, then reload.',
      }),
    );
  }

  clear(): void {
    this.#key = '';
    fill(this.#list);
    fill(this.#allowlist);
  }

  update(approvals: readonly ApprovalView[], allowlist: readonly string[] | undefined): void {
    const key = JSON.stringify([approvals, allowlist]);
    if (key === this.#key) return;
    this.#key = key;
    // This session's own first, then global ones, then the config's.
    const rank = (a: ApprovalView) => (a.origin === 'config' ? 2 : a.session === null ? 1 : 0);
    const sorted = [...approvals].sort((a, b) => rank(a) - rank(b));
    fill(
      this.#list,
      ...(sorted.length === 0
        ? [h('li', { class: 'muted', text: 'None: nothing is approved.' })]
        : sorted.map((a) => this.#item(a))),
    );
    fill(
      this.#allowlist,
      ...(allowlist === undefined
        ? [h('li', { class: 'muted', text: 'Not reported by this gateway.' })]
        : allowlist.length === 0
          ? [h('li', { class: 'muted', text: 'Empty: the config allows nothing for it.' })]
          : allowlist.map((p) => h('li', { class: 'mono', text: p }))),
    );
  }

  #item(a: ApprovalView): HTMLElement {
    const config = a.origin === 'config';
    const scope = config
      ? `config: ${a.source ?? 'network.allow'}`
      : a.session === null
        ? 'all sessions'
        : 'this session';
    return h(
      'li',
      { class: 'approval', attrs: { 'data-id': a.id ?? '' } },
      h(
        'div',
        { class: 'approval-text' },
        h('span', { class: 'approval-pattern mono', text: a.pattern }),
        h(
          'span',
          { class: 'approval-meta' },
          `${a.kind} · ${scope}`,
          ` · ${a.expiresAt ? `expires ${clock(a.expiresAt)}` : 'no expiry'}`,
          a.by ? ` · by ${a.by}` : '',
          a.id ? h('span', { class: 'approval-id mono', text: a.id }) : null,
        ),
      ),
      config || !a.id
        ? null
        : h('button', {
            class: 'btn btn-small btn-danger',
            text: 'Revoke…',
            attrs: { type: 'button', 'aria-label': `Revoke approval ${a.id}: ${a.pattern}` },
            on: { click: () => void this.#revoke(a, scope) },
          }),
    );
  }

  async #revoke(a: ApprovalView, scope: string): Promise<void> {
    const ok = await confirmAction({
      title: 'Revoke this approval?',
      lines: [
        ['Approval', a.id],
        ['Pattern', `${a.kind} ${a.pattern}`],
        ['Applies to', scope],
      ],
      note: 'What it allowed is judged again from the next request on (and counts again); tunnels it admitted close.',
      confirm: 'Revoke',
      tone: 'danger',
    });
    if (!ok) return;
    await this.#actions.run(async () => {
      const r = await call<{ revoked: ApprovalView; closed?: number | unknown[] }>(
        'DELETE',
        `/api/approvals/${encodeURIComponent(a.id)}`,
      );
      const closed = Array.isArray(r.closed) ? r.closed.length : Number(r.closed ?? 0);
      return `Revoked ${r.revoked.id} (${r.revoked.pattern})${closed > 0 ? `; ${closed} tunnel${closed === 1 ? '' : 's'} closed` : ''}.`;
    });
  }
}
