import type { Event } from '../event/event.js';
import { destination } from '../event/event.js';
import { isInside } from '../event/paths.js';
import { globMatcher } from './glob.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { parseNetworkPattern, reachesNetwork } from '../event/network-pattern.js';
import type { Boundary, GuardPolicy, Targets } from './compiled-policy.js';

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
