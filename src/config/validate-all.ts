import type { z } from 'zod';
import { branchIssues } from './issues.js';
import type { KeyPath } from './problems.js';
import { within } from './problems.js';

/** Rounds of validation at most: each removes what the last one found wrong. */
const ROUNDS = 6;

/**
 * Checks configSchema's last refinement makes across sections (schema.ts): an issue there,
 * found only once a removed key took its default, counts only if none of the keys it read
 * was removed (an agent's role names a role that was removed for its own error).
 */
const READS: readonly (readonly [KeyPath, readonly KeyPath[]])[] = [
  [['agents'], [['roles']]],
  [['credentials'], [['agents'], ['roles']]],
  [
    ['policy', 'sequences'],
    [
      ['policy', 'boundaries'],
      ['bridge', 'unmapped'],
    ],
  ],
];

export interface Validated<T> {
  /** The value with every invalid key at its default; null when that was not enough. */
  readonly data: T | null;
  /** The keys removed to get there: anything worked out from them is not to be trusted. */
  readonly removed: readonly KeyPath[];
}

/**
 * Validates `value`, reporting each issue once. zod skips an object's refinements while one of
 * its fields fails (the cross-key checks: roles, crossings, a boundary's counts), so each
 * round removes the keys that failed (a list whole: its items' indices must stay), letting
 * them take their defaults, and validates again: the checks that were skipped then run.
 * Issues a removal caused, or that read a removed key, are not reported. Issues under `quiet`
 * (a `${VAR}` that is unset: already reported) are not reported either.
 */
export function validateAll<T>(
  schema: z.ZodType<T>,
  value: unknown,
  report: (issue: z.core.$ZodIssue) => void,
  quiet: readonly KeyPath[] = [],
): Validated<T> {
  let current = value;
  const removed: KeyPath[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const result = schema.safeParse(current, { reportInput: true });
    if (result.success) return { data: result.data, removed };
    const next = structuredClone(current);
    const before = [...removed];
    let changed = false;
    for (const issue of branchIssues(result.error.issues)) {
      const paths =
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((k) => [...issue.path, k])
          : [issue.path as KeyPath];
      const caused = paths.some(
        (p) => [...before, ...quiet].some((r) => within(p, r)) || readsRemoved(p, before),
      );
      if (!caused) report(issue);
      for (const p of paths) {
        // A removal that still fails (a required key) takes its parent with it.
        const under = removed.find((r) => within(p, r));
        const target = keyOf(under ? under.slice(0, -1) : p);
        if (target.length === 0) return { data: null, removed };
        if (removed.some((r) => within(target, r))) continue;
        unset(next, target);
        removed.push(target);
        changed = true;
      }
    }
    if (!changed) return { data: null, removed };
    current = next;
  }
  return { data: null, removed };
}

/** Whether an issue may come of a removal: a sibling key, or a key its check reads, removed. */
function readsRemoved(path: KeyPath, removed: readonly KeyPath[]): boolean {
  const reads = READS.filter(([at]) => within(path, at)).flatMap(([, keys]) => keys);
  return removed.some(
    (r) => within(r, path.slice(0, -1)) || reads.some((k) => within(r, k) || within(k, r)),
  );
}

/** The key to remove for a path: a list item's whole list (later items keep their indices). */
function keyOf(path: KeyPath): KeyPath {
  let end = path.length;
  while (end > 0 && typeof path[end - 1] === 'number') end--;
  return path.slice(0, end);
}

/** Removes the key at `path` (`version`, required and with no default, is set to 1). */
function unset(root: unknown, path: KeyPath): void {
  let node = root as Record<PropertyKey, unknown>;
  for (const part of path.slice(0, -1)) {
    const child = node[part];
    if (typeof child !== 'object' || child === null) return;
    node = child as Record<PropertyKey, unknown>;
  }
  const last = path.at(-1) as PropertyKey;
  if (path.length === 1 && last === 'version') node[last] = 1;
  else delete node[last];
}
