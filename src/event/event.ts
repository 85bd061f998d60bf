import type { Source } from '../wire.js';

/**
 * The trajectory event: what the agent tried (`kind`, `target`, `approved`, as in the seed
 * article) plus what the gateway adds (`session`, `source`, `ts`; `seq` comes from the journal).
 * `subject` is the normalised view the guard judges: a resolved path, a parsed network
 * destination, or an opaque string for kinds the gateway knows nothing about.
 */
export const PATH_KINDS: ReadonlySet<string> = new Set(['read', 'write', 'command']);
/**
 * `internal`: an action that touches nothing outside the agent (a runner's todo list, a
 * sub-agent whose own calls are judged): journaled and shown, counted by no default boundary.
 */
export const BUILTIN_KINDS: readonly string[] = ['read', 'write', 'command', 'network', 'internal'];

export type { Source };

/**
 * A credential's sentinel found where it does not belong (a request to another host, a tool's
 * arguments, a command line): which credential (never its value) and where it was found.
 */
export interface Exfiltration {
  readonly credential: string;
  /** `header X-Token`, `url`, `body (base64)`, `tunnel bytes`, `tool arguments`, … */
  readonly where: string;
}

/**
 * The session was shown a tool list that differs from its server's pinned one (boundary
 * `tool-changed`): the server, the list's digest and, live, what changed (for the reason).
 */
export interface ToolMark {
  readonly server: string;
  readonly digest: string;
  /** `read_notes description changed, send_mail added` (event/tool-diff.ts diffSummary). */
  readonly what?: string;
}

export interface PathSubject {
  readonly type: 'path';
  /** Absolute real path, or null when it could not be resolved (judged as outside). */
  readonly path: string | null;
  /** The lexical-`..` reading when it differs from `path` (see pathReadings), else null. */
  readonly alias: string | null;
  /**
   * `device:inode` of each reading that is a regular file with more than one name (hard
   * links): its other names may be anywhere, trajgate's own files included. Absent: none.
   */
  readonly inodes?: readonly string[] | undefined;
  /**
   * The call can return content (or names) from anywhere under this directory (a search, a
   * directory tree, a grep): read rules match it when any path under it could match.
   */
  readonly tree?: true;
}

export interface NetworkSubject {
  readonly type: 'network';
  /** Lower-case scheme without `://`, or null for a CONNECT authority (scheme not visible). */
  readonly scheme: string | null;
  /** Canonical host: lower-case punycode without trailing dot; IPv6 without brackets. */
  readonly host: string;
  readonly port: number;
  /** URL path (dot segments removed), or null when the path is not visible (CONNECT). */
  readonly path: string | null;
  /** Upper-case request method, or null when not visible. */
  readonly method: string | null;
}

export interface OpaqueSubject {
  readonly type: 'opaque';
  readonly value: string;
}

export type Subject = PathSubject | NetworkSubject | OpaqueSubject;

/**
 * What a caller hands in: the seed article's event with optional extras. No `approved`: only
 * an operator approves, so live traffic cannot carry it (replay passes it in EventContext).
 */
export interface EventInput {
  readonly kind: string;
  readonly target: string;
  readonly method?: string;
  /** A network target the ingress has already parsed (saves parsing it twice per request). */
  readonly url?: URL;
  /** A path target the ingress has already resolved: judged as it will be forwarded. */
  readonly readings?: Omit<PathSubject, 'type' | 'tree'>;
  /** The sender reports the action failed (a runner's hook, a recorded line). */
  readonly failed?: true;
  /** A read of everything under its path (PathSubject.tree). */
  readonly tree?: true;
  /** The runner's id of the call (Claude Code's `tool_use_id`): its result names it. */
  readonly call?: string;
  /**
   * A `command` event's command line, as the runner or tool was given it: shown to the people
   * who review, never judged (the guard judges kind and target). Redacted when normalised.
   */
  readonly command?: string;
  /** Set by trajgate, never by a sender: a sentinel found where it does not belong. */
  readonly exfiltration?: Exfiltration;
  /** Why trajgate refuses it on its own, whatever allows it (Event.denied). */
  readonly refused?: string;
  /** Set by trajgate, never by a sender: the session was shown a changed tool list. */
  readonly toolChange?: ToolMark;
  /** The credentials this request carries to their own hosts (swapped for their values). */
  readonly credentials?: readonly string[];
}

export interface Event {
  readonly kind: string;
  readonly target: string;
  readonly approved: boolean;
  /**
   * A recorded event approved by this pattern when it was judged (replay of a journal): judged
   * as approved by it, which trajectory rules see, rather than as an operator's approve-once.
   */
  readonly approvedBy?: string | undefined;
  readonly session: string;
  readonly source: Source;
  /** Milliseconds since the epoch; the guard reads time only from here. */
  readonly ts: number;
  readonly method?: string;
  readonly subject: Subject;
  /**
   * Set when the gateway refuses the event on its own (a private address, a port not
   * allowed, a path it cannot resolve, a write to a hard-linked file): no approval can cover it, and it counts as an unapproved crossing.
   */
  readonly denied?: string;
  /** The event is itself a failure report: it sets trajectory marks that ask `failed`. */
  readonly failed?: true;
  /** The runner's id of the call it asked about (EventInput.call). */
  readonly call?: string;
  /** EventInput.command with its secrets redacted (event/command-line.ts). */
  readonly command?: string | undefined;
  readonly exfiltration?: Exfiltration | undefined;
  readonly credentials?: readonly string[] | undefined;
  readonly toolChange?: ToolMark | undefined;
}

/** The destination used by `countBy: target`: host:port for network, else the target. */
export function destination(subject: Subject): string {
  switch (subject.type) {
    case 'network':
      return `${subject.host.includes(':') ? `[${subject.host}]` : subject.host}:${subject.port}`;
    case 'path':
      return subject.path ?? '(unresolved)';
    case 'opaque':
      return subject.value;
  }
}
