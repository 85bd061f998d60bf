import type { Event, EventInput, PathSubject, Source, Subject } from './event.js';
import { PATH_KINDS } from './event.js';
import { TrajgateError } from '../errors.js';
import { redactCommand } from './command-line.js';
import { networkTargetProblem } from './network-readings.js';
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

const FETCHED_ELSEWHERE: ReadonlySet<Source> = new Set(['bridge', 'ingest']);

/** Turns what an agent tried into the event the guard judges. Throws E_EVENT_INVALID. */
export function normalizeEvent(
  input: EventInput,
  ctx: EventContext,
  paths: PathResolver = pathReadings,
): Event {
  const subject = subjectOf(input, ctx, paths);
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
    subject,
    denied:
      input.refused ?? (subject.type === 'path' ? pathRefusal(input.kind, subject) : undefined),
    failed: input.failed,
    call: input.call,
    // Redacted here, before any record holds it: every event is normalised first.
    command: input.command === undefined ? undefined : redactCommand(input.command),
    exfiltration: input.exfiltration,
    credentials: input.credentials,
    toolChange: input.toolChange,
  };
}

/**
 * Path events refused whatever allows them. A path trajgate could not resolve (a link loop, no
 * permission, a name too long) names something unknown: its raw text is never judged, as the
 * tool server may resolve it where trajgate could not. A regular file with other hard links
 * has names trajgate cannot see, which may be outside the workspace: a write to it is refused.
 */
function pathRefusal(kind: string, subject: PathSubject): string | undefined {
  if (subject.path === null) return UNRESOLVED;
  if (kind === 'write' && subject.inodes !== undefined) return HARD_LINKED;
  return undefined;
}

const HARD_LINKED = 'the file has other hard links: its other names may be outside the workspace';
const UNRESOLVED =
  'the path cannot be resolved (a link loop, no permission, or a name too long): what it names is unknown';

function subjectOf(input: EventInput, ctx: EventContext, paths: PathResolver): Subject {
  if (input.kind === 'network') {
    // A target another client fetches (a runner, a tool server) must read one way to both
    // URL grammars; the proxy fetches what it parsed itself, replay judges what was recorded.
    const problem = FETCHED_ELSEWHERE.has(ctx.source) ? networkTargetProblem(input.target) : null;
    if (problem !== null) throw new TrajgateError('E_EVENT_INVALID', problem);
    return parseNetworkTarget(input.target, input.method, input.url);
  }
  if (PATH_KINDS.has(input.kind)) {
    const readings = input.readings ?? paths(input.target, ctx.workspace);
    return input.tree === true
      ? { type: 'path', ...readings, tree: true }
      : { type: 'path', ...readings };
  }
  return { type: 'opaque', value: input.target };
}
