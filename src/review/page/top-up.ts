// A budget's pause (`PAUSE: budget`): what the budget used of its limit in its window, and a
// "Top up…" button that raises it (by the budget's own limit unless the operator types another
// amount) and resumes the session, after the confirm dialog, as the CLI's `topup` does.

import type { Actions } from './actions.js';
import { call, sessionPath } from './api.js';
import { confirmAction } from './confirm.js';
import { h } from './dom.js';
import type { BudgetView, SessionDetail, TopUpAnswer } from '../../wire.js';

/** `5 of 5 requests used within 1h (3 + 2 topped up)`. */
function usage(b: BudgetView): string {
  const own = b.limit - b.toppedUp;
  const topped = b.toppedUp > 0 ? ` (${own} + ${b.toppedUp} topped up)` : '';
  const unit = b.measure === 'bytesUp' ? 'bytes sent up' : b.measure;
  return `${b.used} of ${b.limit} ${unit} used within ${b.within}${topped}`;
}

/** The budget that paused the session, with its top-up button; null for any other pause. */
export function topUpSection(d: SessionDetail, actions: Actions): HTMLElement | null {
  const name = d.pause?.boundary === 'budget' ? d.pause.trigger.rule?.name : undefined;
  const budget = (d.budgets ?? []).find((b) => b.name === name);
  if (budget === undefined) return null;
  const amount = h('input', {
    attrs: {
      id: 'topup-amount',
      type: 'number',
      min: '1',
      step: '1',
      value: String(budget.limit - budget.toppedUp),
      inputmode: 'numeric',
    },
  });
  const button = h('button', {
    class: 'btn btn-go',
    text: 'Top up…',
    attrs: { type: 'button', id: 'topup' },
    on: { click: () => void topUp(actions, d.id, budget, amount) },
  });
  const ends =
    budget.windowEnds === null
      ? ''
      : `; its window ends ${new Date(budget.windowEnds).toLocaleString()}`;
  return h(
    'section',
    { class: 'budget-topup', attrs: { 'aria-label': 'Budget' } },
    h('h3', { text: `Budget ${budget.name}` }),
    h('p', { class: 'help', text: `${usage(budget)}${ends}.` }),
    h(
      'div',
      { class: 'field' },
      h('label', { text: 'Top up by', attrs: { for: 'topup-amount' } }),
      amount,
    ),
    h('div', { class: 'btn-row' }, button),
  );
}

async function topUp(
  actions: Actions,
  session: string,
  b: BudgetView,
  input: HTMLInputElement,
): Promise<void> {
  const n = Number(input.value);
  if (!Number.isSafeInteger(n) || n < 1) {
    actions.say('Top up by a whole number of at least 1.', 'error');
    input.focus();
    return;
  }
  const ok = await confirmAction({
    title: `Top up budget ${b.name}?`,
    lines: [
      ['Session', session],
      ['Budget', `${b.name}: ${usage(b)}`],
      ['Top up by', String(n)],
      ['New limit', `${b.limit + n} in this window`],
    ],
    note: 'The session resumes and each held request is judged again; one past the new limit pauses it again. A new window starts from the budget’s own limit.',
    confirm: 'Top up',
    tone: 'go',
  });
  if (!ok) return;
  await actions.run(async () => {
    const r = await call<TopUpAnswer>('POST', `${sessionPath(session)}/topup`, {
      budget: b.name,
      amount: n,
    });
    const now = r.budget === null ? '' : ` Now ${usage(r.budget)}.`;
    const resumed = r.resumed
      ? ` Resumed: ${r.released} held request${r.released === 1 ? '' : 's'} judged again.`
      : '';
    const again = r.pausedAgain
      ? ` Request #${r.pausedAgain.trigger.seq} paused the session again at once (${r.pausedAgain.reason}): decide again.`
      : '';
    return `Topped up ${b.name} by ${n}.${now}${resumed}${again}`;
  });
}
