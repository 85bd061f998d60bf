import type { Event, EventInput } from '../event/event.js';
import { normalizeEvent } from '../event/normalize.js';
import type { PathResolver } from '../event/paths.js';
import type { Decision, Guard } from '../guard/guard.js';

/** Where a replayed event sits: its session and time, and how its decision is named. */
export interface ReplayedAt {
  readonly session: string;
  readonly ts: number;
  /** The journal's seq, or the line number of a bare line. */
  readonly seq: number;
  /** The request id its outcome or result names. */
  readonly rid?: number | undefined;
  readonly approved?: boolean;
  readonly approvedBy?: string | undefined;
}

/**
 * Judges one event offline as the live gateway does: normalised against its session's
 * workspace, judged (`Guard.inspect`), and committed at once (nothing is written, so each
 * decision takes effect as it is made). Answers the event as judged (normalised, its command
 * line redacted).
 */
export function replayEvent(
  input: EventInput,
  at: ReplayedAt,
  guard: Guard,
  paths: PathResolver,
): { event: Event; decision: Decision } {
  const event = normalizeEvent(
    input,
    {
      session: at.session,
      source: 'replay',
      ts: at.ts,
      workspace: guard.policy.workspaceFor(at.session),
      approved: at.approved === true,
      approvedBy: at.approvedBy,
    },
    paths,
  );
  const decision = guard.inspect(event);
  const ref = { seq: at.seq, rid: at.rid, kind: event.kind, target: event.target };
  guard.commit(at.session, event.ts, decision, ref);
  return { event, decision };
}
