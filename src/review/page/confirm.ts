// The confirmation every action asks first: a modal <dialog> listing what will be done.

import { byId, fill, h } from './dom.js';

/** Asks in the page's modal dialog; resolves true only for the confirm button. */
export function confirmAction(ask: {
  title: string;
  lines: [string, string][];
  note: string;
  confirm: string;
  tone: 'primary' | 'go' | 'danger';
}): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm');
  const yes = h('button', {
    class: `btn btn-${ask.tone}`,
    text: ask.confirm,
    attrs: { type: 'button' },
    on: { click: () => dialog.close('yes') },
  });
  const no = h('button', {
    class: 'btn',
    text: 'Cancel',
    attrs: { type: 'button' },
    on: { click: () => dialog.close('no') },
  });
  fill(
    dialog,
    h(
      'div',
      { class: 'confirm-body' },
      h('h2', { attrs: { id: 'confirm-title' }, text: ask.title }),
      h(
        'dl',
        { class: 'confirm-lines' },
        ...ask.lines.flatMap(([k, v]) => [
          h('dt', { text: k }),
          h('dd', { class: 'mono', text: v }),
        ]),
      ),
      h('p', { class: 'help', text: ask.note }),
      h('div', { class: 'btn-row btn-row-end' }, no, yes),
    ),
  );
  dialog.setAttribute('aria-labelledby', 'confirm-title');
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.showModal();
    // A destructive action starts on Cancel; the others on their own button.
    (ask.tone === 'danger' ? no : yes).focus();
  });
}
