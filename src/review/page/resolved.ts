// A path event's target as it was resolved when judged, where that differs from what the agent
// sent: the verdict is about the resolved path (as the CLI and chat text show it too).

import type { EventRecord } from '../../wire.js';

/** The resolved path to show beside the target, or null when it says nothing more. */
export function resolved(e: EventRecord): string | null {
  if (e.resolved === undefined || e.targetBytes !== undefined) return null;
  if (e.resolved === null) return '(unresolvable: judged as outside)';
  return e.resolved === e.target ? null : e.resolved;
}
