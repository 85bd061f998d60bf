import type { ToolChangeView } from '../wire.js';

/** Tools named in a one-line summary before "and N more". */
const NAMED = 8;
const NAME_CHARS = 80;

/**
 * A changed tool list in one line for a chat notification or the decision-link page:
 * `changed read_notes (description), added fetch; and 3 more`. `safe` makes each name the
 * server chose inert for where it goes (chatSafe, or printable and HTML-escaped); the rest is
 * trajgate's own text.
 */
export function toolChangeSummary(
  change: ToolChangeView,
  safe: (text: string, max: number) => string,
): string {
  const named = change.diff.slice(0, NAMED).map((d) => {
    const fields =
      d.change === 'changed' && d.fields.length > 0
        ? ` (${d.fields.map((f) => safe(f, 40)).join(', ')})`
        : '';
    return `${d.change} ${safe(d.tool, NAME_CHARS)}${fields}`;
  });
  const more = change.diff.length - named.length;
  return named.length === 0
    ? 'no tool differs'
    : `${named.join(', ')}${more > 0 ? `; and ${more} more` : ''}`;
}
