import type { Event } from '../event/event.js';
import { TOOL_CHANGED } from '../event/own-boundaries.js';

export { TOOL_CHANGED };

/**
 * `tools/list of bridge changed: read_notes description changed, send_mail added:
 * tool-changed`; a replayed record knows only the list's digest.
 */
export function toolChangedReason(event: Event): string {
  const { server, digest, what } = event.toolChange!;
  const how = what === undefined || what === '' ? ` (list ${digest.slice(0, 12)})` : `: ${what}`;
  return `tools/list of ${server} changed${how}: ${TOOL_CHANGED}`;
}
