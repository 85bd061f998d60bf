import type { Event, EventInput, Source, Subject } from './event.js';
import { PATH_KINDS } from './event.js';
import { parseNetworkTarget } from './network-target.js';
import type { PathResolver } from './paths.js';
import { pathReadings } from './paths.js';

export interface EventContext {
  readonly session: string;
  readonly source: Source;
  readonly ts: number;
  /** The session's workspace (already a real path); relative targets resolve against it. */
  readonly workspace: string;
  /** A recorded event marked approved (replay only; live events are approved by operators). */
  readonly approved?: boolean;
  /** The pattern that approved a recorded event (replay of a journal's event record). */
  readonly approvedBy?: string | undefined;
}

/** Turns what an agent tried into the event the guard judges. Throws E_EVENT_INVALID. */
export function normalizeEvent(
  input: EventInput,
  ctx: EventContext,
  paths: PathResolver = pathReadings,
): Event {
  // One object literal, always the same shape (a spread to add `method` would make a second).
  return {
    kind: input.kind,
    target: input.target,
    approved: ctx.approved === true,
    approvedBy: ctx.approved === true ? ctx.approvedBy : undefined,
    session: ctx.session,
    source: ctx.source,
    ts: ctx.ts,
    method: input.method?.toUpperCase(),
    subject: subjectOf(input, ctx.workspace, paths),
    failed: input.failed,
    call: input.call,
  };
}

function subjectOf(input: EventInput, workspace: string, paths: PathResolver): Subject {
  if (input.kind === 'network') return parseNetworkTarget(input.target, input.method, input.url);
  if (PATH_KINDS.has(input.kind)) {
    const { path, alias } = input.readings ?? paths(input.target, workspace);
    return input.tree === true
      ? { type: 'path', path, alias, tree: true }
      : { type: 'path', path, alias };
  }
  return { type: 'opaque', value: input.target };
}
