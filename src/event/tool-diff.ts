import { printable } from './printable.js';
import type { ToolDiffView } from '../wire.js';
import type { ToolDefinitionView } from './tool-definitions.js';
import { canonicalJson, CUT, TOOL_FIELDS } from './tool-definitions.js';

export type { ToolDiffView };

/**
 * How the tools a server sent differ from the pinned ones, in the order it sent them, then the
 * pinned ones it no longer sends. A list that is only a page (`complete` false: a cursor was
 * asked for or given) removes nothing. Empty when it matches.
 */
export function diffTools(
  pinned: readonly ToolDefinitionView[],
  seen: readonly ToolDefinitionView[],
  complete: boolean,
): ToolDiffView[] {
  const before = new Map(pinned.map((t) => [t.name, t]));
  const diff: ToolDiffView[] = [];
  for (const tool of seen) {
    const old = before.get(tool.name);
    if (old === undefined) diff.push({ tool: tool.name, change: 'added', fields: [], new: tool });
    else if (old.digest !== tool.digest)
      diff.push({
        tool: tool.name,
        change: 'changed',
        fields: fieldsOf(old, tool),
        old,
        new: tool,
      });
  }
  if (!complete) return diff;
  const now = new Set(seen.map((t) => t.name));
  for (const old of pinned)
    if (!now.has(old.name)) diff.push({ tool: old.name, change: 'removed', fields: [], old });
  return diff;
}

/**
 * The fields whose kept form differs; when only what was cut from them does, those cut (the
 * digests say they differ, what is kept cannot say where).
 */
function fieldsOf(old: ToolDefinitionView, now: ToolDefinitionView): string[] {
  const text = (t: ToolDefinitionView, f: (typeof TOOL_FIELDS)[number]) =>
    t[f] === undefined ? undefined : canonicalJson(t[f]);
  const differ = TOOL_FIELDS.filter((f) => text(old, f) !== text(now, f));
  if (differ.length > 0) return differ;
  const isCut = (v: unknown) => typeof v === 'string' && CUT.test(v);
  return TOOL_FIELDS.filter((f) => isCut(old[f]) || isCut(now[f]));
}

/** Tool names a reason shows whole; more are counted. */
const NAMED = 5;
const NAME_CHARS = 64;

/** `read_notes description changed, send_mail added` (server-chosen names: one line, bounded). */
export function diffSummary(diff: readonly ToolDiffView[]): string {
  const name = (s: string) => {
    const chars = [...printable(s)];
    return chars.length > NAME_CHARS
      ? `${chars.slice(0, NAME_CHARS - 1).join('')}…`
      : chars.join('');
  };
  const parts = diff.slice(0, NAMED).map((d) => {
    const what = d.change === 'changed' && d.fields.length > 0 ? ` ${d.fields.join(' and ')}` : '';
    return `${name(d.tool)}${what} ${d.change}`;
  });
  const more = diff.length - NAMED;
  return more > 0 ? `${parts.join(', ')} and ${more} more` : parts.join(', ');
}
