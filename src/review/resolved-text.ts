import type { EventRecord } from '../wire.js';

/**
 * A path event's target as it was resolved when judged, when that differs from what the agent
 * sent (`notes.txt` → `/ws/notes.txt`, a link followed, `..` taken): ` → /ws/notes.txt`, or
 * ` → (unresolvable: judged as outside)`. The verdict is about the resolved path, so a reviewer
 * shown only the text sent would judge another file.
 */
export function resolvedSuffix(
  e: Pick<EventRecord, 'target' | 'resolved' | 'targetBytes'>,
): string {
  if (e.resolved === undefined || e.targetBytes !== undefined) return '';
  if (e.resolved === null) return ' → (unresolvable: judged as outside)';
  return e.resolved === e.target ? '' : ` → ${e.resolved}`;
}
