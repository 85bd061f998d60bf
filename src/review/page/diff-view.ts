// A line diff drawn (line-diff.ts computes it): a sign per line, the differing part marked,
// the text inert (inert-text.ts) as text nodes, at most `max` characters shown and the rest
// behind a button that shows it, still inert.

import { h, plural } from './dom.js';
import { cut, inertPieces, length } from './inert-text.js';
import type { DiffLine } from './line-diff.js';
import type { ToolDefinitionView } from '../../wire.js';

/** `text` as inert nodes: escapes and URLs in spans of their own, never markup or links. */
function inertNodes(text: string): Node[] {
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
