import type { OwnFiles } from '../config/own-files.js';
import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import { isInside } from '../event/paths.js';
import type { Approval } from './approvals.js';
import type { Deny } from './denies.js';
import type { TargetMatcher } from './glob.js';
import { globMatcher } from './glob.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { parseNetworkPattern, reachesNetwork } from '../event/network-pattern.js';
import type { Sequence } from './sequences.js';

export type CountBy = 'boundary' | 'target';

/** A boundary as the guard uses it: which events cross it and at which counts it acts. */
export interface Boundary {
  readonly name: string;
  readonly kinds: ReadonlySet<string>;
  /** `workspace`: crossed by path events outside the session's workspace. */
  readonly outside: 'workspace' | null;
  /** Crossed only by targets matching these (globs; network patterns for network events). */
  readonly targets: Targets | null;
  /** Count at which it starts answering REVIEW; null: never reviews, only pauses. */
  readonly reviewAt: number | null;
  readonly pauseAt: number;
}

/** A boundary's or a trajectory rule's `targets`: globs, and network patterns for network events. */
export interface Targets {
  readonly glob: TargetMatcher;
  readonly network: readonly NetworkPattern[];
}

export interface GuardPolicy {
  readonly countBy: CountBy;
  readonly boundaries: readonly Boundary[];
  /** Trajectory rules (`policy.sequences`), in config order; empty costs nothing. */
  readonly sequences: readonly Sequence[];
  /**
   * Approvals from configuration: `network.allow` (global), agents' and their roles' `allow`
   * (for that agent's session).
   */
  readonly allow: readonly Approval[];
  /** `network.deny`: refused whatever allows or approves them. */
  readonly deny: readonly Deny[];
  /** trajgate's own files (boundary `trajgate-files`): no event reaches them, nothing approves one. */
  readonly protected: OwnFiles;
  /** A session's effective config allowlist: network.allow, its agent's and roles' allow. */
  allowlistFor(session: string): string[];
  /** The real path of a session's workspace. */
  workspaceFor(session: string): string;
}

export function crosses(b: Boundary, event: Event, workspace: string): boolean {
  if (!b.kinds.has(event.kind)) return false;
  const s = event.subject;
  if (b.outside === 'workspace') {
    if (s.type !== 'path') return false;
    const inside =
      s.path !== null &&
      isInside(s.path, workspace) &&
      (s.alias === null || isInside(s.alias, workspace));
    if (inside) return false;
  }
  return b.targets === null || matchesTargets(b.targets, event);
}

/**
 * `targets` as configured: every entry a glob; as network patterns, each entry when `network`
 * is `all` (already validated), those that parse when `parseable` (the kinds are not given).
 */
export function compileTargets(
  targets: readonly string[],
  network: 'all' | 'parseable' | 'none',
): Targets {
  const patterns: NetworkPattern[] = [];
  for (const t of network === 'none' ? [] : targets) {
    try {
      patterns.push(parseNetworkPattern(t));
    } catch (err) {
      if (network === 'all') throw err;
    }
  }
  return { glob: globMatcher(targets), network: patterns };
}

/**
 * A path by its real path or its lexical reading, a network destination by pattern on any
 * reading of its path (a rule naming a path fires however it is spelled). A tree read matches
 * when any path under its root could: what it returns may come from there.
 */
export function matchesTargets(targets: Targets, event: Event): boolean {
  const s = event.subject;
  if (s.type === 'network') return targets.network.some((p) => reachesNetwork(p, s) !== null);
  if (s.type === 'path') {
    // An unresolved path may be any path: never judged by its raw text (fail closed).
    const g = targets.glob;
    const test = s.tree === true ? g.reaches : g.test;
    return s.path === null || test(s.path) || (s.alias !== null && test(s.alias));
  }
  return targets.glob.test(s.value);
}

/** The counter a crossing bumps: per boundary, or per boundary and destination. */
export function countKey(policy: GuardPolicy, boundary: string, event: Event): string {
  return policy.countBy === 'boundary' ? boundary : `${boundary} ${destination(event.subject)}`;
}

/** The boundary part of a counter key. */
export function boundaryOfKey(key: string): string {
  const space = key.indexOf(' ');
  return space === -1 ? key : key.slice(0, space);
}
