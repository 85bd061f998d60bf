import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SnapshotSource } from '../../src/journal/snapshot-build.js';
import type { JournalWriter } from '../../src/journal/writer.js';

/** A snapshot of no sessions whose head holds `head`: rotation without a gateway's state. */
export function fixedSnapshot(head: unknown): SnapshotSource {
  return { sessions: () => [], part: () => null, head: () => head, touches: () => null };
}

/**
 * Lets a snapshot build go on between records: `wait` (0..1, from the test's random source)
 * below 0.05 waits for the build to be ready, below 0.35 gives it one turn of the event loop.
 */
export async function letBuild(w: JournalWriter, wait: number): Promise<void> {
  if (wait < 0.05) await w.building;
  else if (wait < 0.35) await nextTurn();
}
