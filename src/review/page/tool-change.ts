// A pause on a changed tool list (`tool-changed`): which server sent it, each tool added,
// removed or changed, for a changed one the fields that differ as a line diff (old above new,
// the differing part marked; schemas as sorted, pretty-printed JSON), the digests, and "Pin the
// new tool list and resume". What the server wrote is inert (inert-text.ts): text nodes only,
// hidden characters as visible escapes, URLs as text, each field bounded with the rest behind
// a button. No approval covers the pause: pinning the new list is what lets the session go on.

import type { Actions } from './actions.js';
import { call } from './api.js';
import { confirmAction } from './confirm.js';
import { diffBox, fieldText } from './diff-view.js';
import { h, plural } from './dom.js';
import { inertLine } from './inert-text.js';
import { lineDiff } from './line-diff.js';
import type { EventRecord, PauseRecord, ToolChangeView, ToolDiffView } from '../../wire.js';

/** Characters of one field shown before "… N more characters". */
const FIELD_CHARS = 2_000;
/** Tools listed before "Show N more tools". */
const TOOLS_SHOWN = 20;
/** Server and tool names, field names: one short line each. */
const NAME_CHARS = 120;
const FIELDS = ['title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

type Row = (name: string, ...value: (Node | string)[]) => HTMLElement[];

/** A short name the server chose, inert and cut to one line. */
const name = (text: string, cls: string) =>
  h('span', { class: `mono ${cls}`, text: inertLine(text, NAME_CHARS) });

/** The pause record's rows for a changed tool list: the server, the digests, what decides it. */
export function toolChangeRows(p: PauseRecord, row: Row): HTMLElement[] {
  const c = p.toolChange;
  if (c === undefined) return [];
  return [
    ...row(
      'Server',
      name(c.server, 'tool-server'),
      ' sent a tool list that differs from the pinned one',
    ),
    ...row('New list', h('span', { class: 'mono digest', text: c.digest })),
    ...row('Pinned list', h('span', { class: 'mono digest', text: c.pinned })),
    ...row('Approval', 'none can cover it: pin the new list after review, or deny'),
  ];
}

/** An event that carried a changed list's mark: its detail row. */
export function toolChangeEventRows(e: EventRecord, row: Row): HTMLElement[] {
  const c = e.toolChange;
  if (c === undefined) return [];
  return row(
    'Tool list',
    'server ',
    name(c.server, 'tool-server'),
    ` sent a changed list (${c.digest.slice(0, 12)}…)`,
  );
}

/**
 * The difference, tool by tool, and the pin button (`paused`: the session is paused on it).
 * Null when the pause is on something else.
 */
export function toolChangeSection(p: PauseRecord, actions: Actions): HTMLElement | null {
  const c = p.toolChange;
  if (c === undefined) return null;
  const list = h('ol', { class: 'tool-diffs' });
  const shown = c.diff.slice(0, TOOLS_SHOWN).map(toolDiff);
  list.append(...shown);
  const rest = c.diff.slice(TOOLS_SHOWN);
  const more =
    rest.length === 0
      ? null
      : h('button', {
          class: 'btn btn-small more',
          text: `Show ${plural(rest.length, 'more tool')}`,
          attrs: { type: 'button' },
          on: {
            click: (e) => {
              (e.currentTarget as HTMLElement).remove();
              list.append(...rest.map(toolDiff));
            },
          },
        });
  const pin = h('button', {
    class: 'btn btn-go tool-pin',
    text: 'Pin the new tool list and resume',
    attrs: { type: 'button' },
    on: { click: () => void pinTools(actions, c) },
  });
  return h(
    'section',
    { class: 'tool-change', attrs: { 'aria-label': 'Tool list changes' } },
    h('h3', {}, 'Tools changed by server ', name(c.server, 'tool-server')),
    h('p', { class: 'help', text: summary(c) }),
    list,
    more,
    h('div', { class: 'btn-row' }, pin),
    h('p', {
      class: 'help',
      text: 'Pinning trusts this list for the server, for every session; the sessions paused on it resume. Deny instead if the change is not one you expect.',
    }),
  );
}

/** `2 changed, 1 added, 1 removed`. */
function summary(c: ToolChangeView): string {
  const n = (change: ToolDiffView['change']) => c.diff.filter((d) => d.change === change).length;
  const parts = (['changed', 'added', 'removed'] as const)
    .filter((k) => n(k) > 0)
    .map((k) => `${n(k)} ${k}`);
  return `${parts.join(', ') || 'no tool differs'} (the server's text, shown inert: hidden characters as ⟨escapes⟩, links as text).`;
}

function toolDiff(d: ToolDiffView): HTMLElement {
  const def = d.change === 'removed' ? d.old : d.new;
  const fields =
    d.change === 'changed'
      ? d.fields
      : FIELDS.filter((f) => def !== undefined && def[f] !== undefined);
  return h(
    'li',
    { class: `tool-diff tool-${d.change}`, attrs: { 'data-tool': d.tool } },
    h(
      'div',
      { class: 'tool-diff-head' },
      h('span', { class: `tool-badge tool-badge-${d.change}`, text: d.change }),
      name(d.tool, 'tool-name'),
      d.change === 'changed'
        ? h('span', {
            class: 'muted',
            text: ` ${d.fields.map((f) => inertLine(f, NAME_CHARS)).join(', ')}`,
          })
        : null,
    ),
    ...fields.map((f) => fieldDiff(f, d)),
  );
}

/** One field: old above new, as a line diff (an added or removed tool: all its lines one way). */
function fieldDiff(field: string, d: ToolDiffView): HTMLElement {
  const before = d.change === 'added' ? '' : fieldText(d.old, field);
  const after = d.change === 'removed' ? '' : fieldText(d.new, field);
  const note =
    d.change !== 'changed'
      ? ''
      : before === ''
        ? ' (absent before)'
        : after === ''
          ? ' (now absent)'
          : '';
  return h(
    'div',
    { class: 'tool-field', attrs: { 'data-field': field } },
    h('div', { class: 'tool-field-name mono', text: `${inertLine(field, NAME_CHARS)}${note}` }),
    diffBox(lineDiff(before, after), FIELD_CHARS),
  );
}

/** Asks, then pins the list the session was shown (`POST /api/tools/:server/approve`). */
async function pinTools(actions: Actions, c: ToolChangeView): Promise<void> {
  const n = (change: ToolDiffView['change']) => c.diff.filter((d) => d.change === change).length;
  const ok = await confirmAction({
    title: 'Pin the new tool list and resume?',
    lines: [
      ['Server', inertLine(c.server, NAME_CHARS)],
      ['New list', c.digest],
      ['Tools', `${n('changed')} changed, ${n('added')} added, ${n('removed')} removed`],
    ],
    note: "The server's tools as listed now become the pinned definitions for every session and agent; every session paused on this change resumes and its held requests are judged again.",
    confirm: 'Pin and resume',
    tone: 'go',
  });
  if (!ok) return;
  await actions.run(async () => {
    const r = await call<{ server: string; digest: string; resumed: string[] }>(
      'POST',
      `/api/tools/${encodeURIComponent(c.server)}/approve`,
      { digest: c.digest },
    );
    const resumed =
      r.resumed.length === 0
        ? 'no session was paused on it'
        : `resumed ${r.resumed.map((s) => inertLine(s, NAME_CHARS)).join(', ')}`;
    return `Pinned the tool list of ${inertLine(r.server, NAME_CHARS)} (${r.digest.slice(0, 12)}…): ${resumed}.`;
  });
}
