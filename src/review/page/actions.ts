// The operator's actions on one session: approve a pattern (pre-filled with the gateway's
// suggestion for the selected event), resume (optionally resetting the counts), deny. Each asks
// for confirmation in a modal dialog, calls the API and reports the answer, errors included, in
// a live region that the other cards' actions (revoke, block) report in too.

import { ApiFailure, call, Down, sessionPath, Unauthorized } from './api.js';
import { confirmAction } from './confirm.js';
import { fill, h } from './dom.js';
import { suggestion } from './suggest.js';
import type { ApprovalView, EventView, ResumeAnswer } from '../../wire.js';

const KINDS = ['network', 'write', 'command', 'read'];

export interface ActionsOptions {
  /** After an action: poll now so the view shows its effect. */
  refresh(): void;
  /** The API refused the token: back to the token form. */
  unauthorized(): void;
}

export class Actions {
  readonly element: HTMLElement;
  readonly #kind: HTMLSelectElement;
  readonly #pattern: HTMLInputElement;
  readonly #ttl: HTMLInputElement;
  readonly #reset: HTMLInputElement;
  readonly #approve: HTMLButtonElement;
  readonly #resume: HTMLButtonElement;
  readonly #deny: HTMLButtonElement;
  readonly #pausedHint: HTMLElement;
  readonly #help: HTMLElement;
  readonly #message: HTMLElement;
  readonly #options: ActionsOptions;
  #session = '';
  #paused = false;
  #held = 0;
  #busy = false;
  /** The event whose suggestion the form waits for or shows. */
  #prefilled: number | null = null;
  /** The operator typed a pattern since: a late suggestion does not overwrite it. */
  #typed = false;

  constructor(options: ActionsOptions) {
    this.#options = options;
    this.#kind = h('select', { attrs: { id: 'approve-kind', name: 'kind' } });
    this.#setKinds('network');
    this.#pattern = h('input', {
      class: 'mono',
      attrs: {
        id: 'approve-pattern',
        name: 'pattern',
        type: 'text',
        autocomplete: 'off',
        spellcheck: 'false',
        required: '',
        placeholder: 'host:port, https://host, METHOD https://host/path',
        'aria-describedby': 'approve-help',
      },
    });
    this.#ttl = h('input', {
      attrs: {
        id: 'approve-ttl',
        name: 'ttl',
        type: 'text',
        autocomplete: 'off',
        placeholder: 'never expires',
        pattern: '\\s*(\\d+(\\.\\d+)?(ms|s|m|h|d))?\\s*',
        title: 'a duration such as 30m, 1h or 7d; empty: no expiry',
        inputmode: 'text',
      },
    });
    this.#approve = h('button', {
      class: 'btn btn-primary',
      text: 'Approve pattern…',
      attrs: { type: 'submit' },
    });
    const form = h(
      'form',
      { class: 'action-approve', attrs: { novalidate: '' } },
      h('h3', { text: 'Approve' }),
      h(
        'div',
        { class: 'field-row' },
        h(
          'div',
          { class: 'field field-kind' },
          h('label', { text: 'Kind', attrs: { for: 'approve-kind' } }),
          this.#kind,
        ),
        h(
          'div',
          { class: 'field field-ttl' },
          h('label', { text: 'Expires after', attrs: { for: 'approve-ttl' } }),
          this.#ttl,
        ),
      ),
      h(
        'div',
        { class: 'field' },
        h('label', { text: 'Pattern', attrs: { for: 'approve-pattern' } }),
        this.#pattern,
      ),
      (this.#help = h('p', {
        class: 'help',
        attrs: { id: 'approve-help' },
        text: APPROVE_HELP,
      })),
      h('div', { class: 'btn-row' }, this.#approve),
    );
    this.#pattern.addEventListener('input', () => (this.#typed = true));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.#onApprove();
    });

    this.#reset = h('input', { attrs: { id: 'resume-reset', type: 'checkbox' } });
    this.#resume = h('button', {
      class: 'btn btn-go',
      text: 'Resume…',
      attrs: { type: 'button', id: 'resume' },
      on: { click: () => void this.#onResume() },
    });
    this.#deny = h('button', {
      class: 'btn btn-danger',
      text: 'Deny…',
      attrs: { type: 'button', id: 'deny' },
      on: { click: () => void this.#onDeny() },
    });
    this.#pausedHint = h('p', { class: 'help', attrs: { id: 'decide-help' } });
    this.#message = h('div', {
      class: 'action-message',
      attrs: { role: 'status', 'aria-live': 'polite', id: 'action-message' },
    });
    this.element = h(
      'section',
      { class: 'card actions', attrs: { 'aria-labelledby': 'actions-title' } },
      h('h2', { attrs: { id: 'actions-title' }, text: 'Decide' }),
      form,
      h(
        'div',
        { class: 'action-decide' },
        h('h3', { text: 'Resume or deny' }),
        h(
          'label',
          { class: 'check' },
          this.#reset,
          ' Reset the counts on resume (approvals are kept)',
        ),
        h('div', { class: 'btn-row' }, this.#resume, this.#deny),
        this.#pausedHint,
      ),
      this.#message,
    );
  }

  /** A different session is shown: forget the form and the last message. */
  show(session: string): void {
    this.#session = session;
    this.#pattern.value = '';
    this.#prefilled = null;
    this.#help.textContent = APPROVE_HELP;
    this.#ttl.value = '';
    this.#reset.checked = false;
    this.#setKinds('network');
    this.#say('', 'none');
  }

  /** The session's state from the latest poll. */
  update(paused: boolean, held: number, disabled: boolean): void {
    this.#paused = paused;
    this.#held = held;
    const off = disabled || this.#busy;
    this.#approve.disabled = off;
    this.#resume.disabled = off || !paused;
    this.#deny.disabled = off || !paused;
    const hint = !paused
      ? 'The session is not paused: nothing to resume or deny.'
      : held === 0
        ? 'Nothing is held right now. Resume lets the session go on; a new request waits until you decide.'
        : `Resume judges each held request again; deny answers ${held === 1 ? 'the held request' : `all ${held} held requests`} 403 and keeps the session paused.`;
    if (this.#pausedHint.textContent !== hint) this.#pausedHint.textContent = hint;
  }

  /**
   * The operator selected an event: propose the approval that fits it (the gateway's
   * suggestion: for a request, its method and path prefix, not the whole host).
   */
  async prefill(event: EventView | null): Promise<void> {
    if (!event || event.seq === this.#prefilled) return;
    const seq = event.seq;
    this.#prefilled = seq;
    this.#typed = false;
    this.#setKinds(event.kind);
    this.#pattern.value = '';
    this.#help.textContent = `Asking the gateway what fits event #${seq}…`;
    try {
      const s = await suggestion(seq);
      if (this.#prefilled !== seq || this.#typed) return;
      this.#setKinds(s.kind);
      this.#pattern.value = s.pattern;
      this.#help.textContent = `Suggested for event #${seq}: ${event.kind === 'network' ? 'its method and path prefix' : 'its target alone'}; edit it to widen or narrow. ${APPROVE_HELP}`;
    } catch (err) {
      if (this.#prefilled !== seq) return;
      if (err instanceof Unauthorized) return this.#options.unauthorized();
      const why = err instanceof ApiFailure ? `${err.status} ${err.code}` : 'no answer';
      this.#help.textContent = `No suggestion for event #${seq} (${why}): type a pattern. ${APPROVE_HELP}`;
    }
  }

  /** Approve from a flagged event: its suggestion in the form, then the confirmation. */
  async approveFrom(event: EventView): Promise<void> {
    this.#prefilled = null;
    await this.prefill(event);
    this.#pattern.focus();
    if (this.#pattern.value !== '') await this.#onApprove();
  }

  #setKinds(selected: string): void {
    const kinds = KINDS.includes(selected) ? KINDS : [...KINDS, selected];
    fill(this.#kind, ...kinds.map((k) => h('option', { text: k, attrs: { value: k } })));
    this.#kind.value = selected;
  }

  async #onApprove(): Promise<void> {
    const pattern = this.#pattern.value.trim();
    const ttl = this.#ttl.value.trim();
    const kind = this.#kind.value;
    if (pattern === '') {
      this.#say('Enter a pattern to approve.', 'error');
      this.#pattern.focus();
      return;
    }
    if (!this.#ttl.checkValidity()) {
      this.#say('Expiry must be a duration such as 30m, 1h or 7d (or empty: no expiry).', 'error');
      this.#ttl.focus();
      return;
    }
    const ok = await confirmAction({
      title: 'Approve this pattern?',
      lines: [
        ['Session', this.#session],
        ['Kind', kind],
        ['Pattern', pattern],
        ['Expires', ttl === '' ? 'never' : `after ${ttl}`],
      ],
      note: 'Matching events of this session will be allowed and not counted. Held requests stay held until you resume.',
      confirm: 'Approve',
      tone: 'primary',
    });
    if (!ok) return;
    await this.run(async () => {
      const { approval } = await call<{ approval: ApprovalView }>(
        'POST',
        `${sessionPath(this.#session)}/approve`,
        { pattern, kind, ...(ttl === '' ? {} : { ttl }) },
      );
      const until = approval.expiresAt
        ? ` until ${new Date(approval.expiresAt).toLocaleString()}`
        : '';
      return `Approved ${approval.kind} ${approval.pattern}${until}.`;
    });
  }

  async #onResume(): Promise<void> {
    const reset = this.#reset.checked;
    const ok = await confirmAction({
      title: 'Resume this session?',
      lines: [
        ['Session', this.#session],
        ['Held requests', String(this.#held)],
        ['Counts', reset ? 'reset to zero' : 'kept'],
      ],
      note: 'Each held request is judged again: an approved one is forwarded, an unapproved one counts again and may pause the session again.',
      confirm: 'Resume',
      tone: 'go',
    });
    if (!ok) return;
    await this.run(async () => {
      const r = await call<ResumeAnswer>('POST', `${sessionPath(this.#session)}/resume`, {
        reset,
      });
      const again = r.pausedAgain
        ? ` Request #${r.pausedAgain.trigger.seq} paused the session again at once (${r.pausedAgain.reason}): decide again.`
        : '';
      return `Resumed${reset ? ' with counts reset' : ''}: ${r.released} held request${r.released === 1 ? '' : 's'} judged again.${again}`;
    });
  }

  async #onDeny(): Promise<void> {
    const ok = await confirmAction({
      title: 'Deny the held requests?',
      lines: [
        ['Session', this.#session],
        ['Held requests', String(this.#held)],
      ],
      note: 'Every held request is answered 403. The session stays paused until you resume it.',
      confirm: 'Deny',
      tone: 'danger',
    });
    if (!ok) return;
    await this.run(async () => {
      const r = await call<{ released: number }>('POST', `${sessionPath(this.#session)}/deny`);
      return `Denied: ${r.released} held request${r.released === 1 ? '' : 's'} answered 403; the session stays paused.`;
    });
  }

  /** Runs one confirmed action, reporting its answer (or error) here; then polls. */
  async run(action: () => Promise<string>): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    this.update(this.#paused, this.#held, false);
    this.#say('Working…', 'info');
    try {
      this.#say(await action(), 'ok');
    } catch (err) {
      if (err instanceof Unauthorized) {
        this.#options.unauthorized();
        return;
      }
      if (err instanceof ApiFailure)
        this.#say(`${err.message} (${err.status} ${err.code})`, 'error');
      else if (err instanceof Down)
        this.#say('The admin API did not answer; nothing was changed. Try again.', 'error');
      else this.#say(`Unexpected error: ${String(err)}`, 'error');
    } finally {
      this.#busy = false;
      this.update(this.#paused, this.#held, false);
      this.#options.refresh();
    }
  }

  /** Reports in the live region (errors as alerts). */
  say(text: string, tone: 'ok' | 'error' | 'info' | 'none'): void {
    this.#say(text, tone);
  }

  #say(text: string, tone: 'ok' | 'error' | 'info' | 'none'): void {
    this.#message.textContent = text;
    this.#message.dataset.tone = tone;
    this.#message.setAttribute('role', tone === 'error' ? 'alert' : 'status');
  }
}

const APPROVE_HELP = 'Approved events of this session are allowed and not counted.';
