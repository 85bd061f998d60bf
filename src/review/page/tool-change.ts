// A pause on a changed tool list (`tool-changed`): which server sent it, each tool added,
// removed or changed, for a changed one the fields that differ as a line diff (old above new,
// the differing part marked; schemas as sorted, pretty-printed JSON), the digests, and "Pin the
// new tool list and resume". What the server wrote is inert (inert-text.ts): text nodes only,
// hidden characters as visible escapes, URLs as text, each field bounded with the rest behind
// a button. No approval covers the pause: pinning the new list is what lets the session go on.

import type { Actions } from './actions.js';
import { call } from './api.js';
import { confirmAction } from './confirm.js';
import { h, plural } from './dom.js';
import { cut, inertLine, inertPieces, length } from './inert-text.js';
import type { DiffLine } from './line-diff.js';
import { lineDiff } from './line-diff.js';
import type {
  EventRecord,
  PauseRecord,
  ToolChangeView,
  ToolDefinitionView,
  ToolDiffView,
} from '../../wire.js';

/** Characters of one field shown before "… N more characters". */
export const FIELD_CHARS = 2_000;
/** Tools listed before "Show N more tools". */
const TOOLS_SHOWN = 20;
/** Server and tool names, field names: one short line each. */
const NAME_CHARS = 120;
const FIELDS = ['title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

type Row = (name: string, ...value: (Node | string)[]) => HTMLElement[];

/** `text` as inert nodes: escapes and URLs in spans of their own, never markup or links. */
export function inertNodes(text: string): Node[] {
  return inertPieces(text).map((p) =>
    p.kind === 'text'
      ? document.createTextNode(p.text)
      : h('span', {
          class: p.kind === 'escape' ? 'esc' : 'url',
          text: p.text,
          attrs: p.kind === 'escape' ? { title: 'a character that does not show' } : {},
        }),
  );
}

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

/** A field's text: a string as is, anything else as sorted, pretty-printed JSON. */
export function fieldText(def: ToolDefinitionView | undefined, field: string): string {
  const value = (def as Record<string, unknown> | undefined)?.[field];
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(sorted(value), null, 2) ?? '';
  } catch {
    return String(value); // nested past what the browser's JSON writer takes
  }
}

/** Keys sorted at every depth, as the digest sees them: a reordering is no difference. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(obj)
      .sort()
      .map((k) => [k, sorted(obj[k])]),
  );
}

const SIGN: Record<DiffLine['op'], string> = { same: ' ', del: '−', add: '+' };

/**
 * Lines with their sign, `max` characters shown; the rest (of that line and the lines after)
 * behind a button that shows it, still inert.
 */
export function diffBox(lines: readonly DiffLine[], max: number): HTMLElement {
  const box = h('div', { class: 'diff mono' });
  let left = max;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as DiffLine;
    const [row, text] = diffRow(line);
    box.append(row);
    const parts = segments(line);
    for (let s = 0; s < parts.length; s++) {
      const [part, marked] = parts[s] as [string, boolean];
      const n = length(part);
      if (n <= left) {
        text.append(segment(part, marked));
        left -= n;
        continue;
      }
      const { shown, rest } = cut(part, left);
      text.append(segment(shown, marked));
      const restParts: [string, boolean][] = [[rest, marked], ...parts.slice(s + 1)];
      const restLines = lines.slice(i + 1);
      const more =
        restParts.reduce((sum, [t]) => sum + length(t), 0) +
        restLines.reduce((sum, l) => sum + length(l.text), 0);
      const button = h('button', {
        class: 'btn btn-small more',
        text: `… ${plural(more, 'more character')}`,
        attrs: { type: 'button' },
        on: {
          click: () => {
            button.replaceWith(...restParts.map(([t, m]) => segment(t, m)));
            for (const l of restLines) {
              const [r, t] = diffRow(l);
              t.append(...segments(l).map(([x, m]) => segment(x, m)));
              box.append(r);
            }
          },
        },
      });
      text.append(button);
      return box;
    }
  }
  return box;
}

function diffRow(line: DiffLine): [HTMLElement, HTMLElement] {
  const text = h('span', { class: 'diff-text' });
  const row = h(
    'div',
    { class: `diff-line diff-${line.op}` },
    h('span', { class: 'diff-sign', text: SIGN[line.op], attrs: { 'aria-hidden': 'true' } }),
    h('span', {
      class: 'visually-hidden',
      text: line.op === 'del' ? 'removed: ' : line.op === 'add' ? 'added: ' : '',
    }),
    text,
  );
  return [row, text];
}

/** A line's text in parts, the differing one flagged. */
function segments(line: DiffLine): [string, boolean][] {
  if (!line.mark) return [[line.text, false]];
  const [a, b] = line.mark;
  return (
    [
      [line.text.slice(0, a), false],
      [line.text.slice(a, b), true],
      [line.text.slice(b), false],
    ] as [string, boolean][]
  ).filter(([t]) => t !== '');
}

function segment(text: string, marked: boolean): Node {
  const nodes = inertNodes(text);
  if (!marked) {
    const frag = document.createDocumentFragment();
    frag.append(...nodes);
    return frag;
  }
  return h('mark', { class: 'diff-mark' }, ...nodes);
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
