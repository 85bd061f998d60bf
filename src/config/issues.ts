import type { z } from 'zod';
import { describeValue } from '../event/validate.js';

/**
 * `policy.boundaries.deploy.kinds[0]`: the key path users see in their YAML. Given the document
 * (`root`), a list item with a string `name` is labelled by it: `policy.sequences[1] (drift).within`.
 */
export function keyPath(path: readonly PropertyKey[], root?: unknown): string {
  let out = '';
  let node = root;
  for (const part of path) {
    node = typeof node === 'object' && node !== null ? (node as never)[part] : undefined;
    if (typeof part === 'number') {
      const name = (node as { name?: unknown } | undefined)?.name;
      out += typeof name === 'string' ? `[${part}] (${name})` : `[${part}]`;
    } else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(top level)' : out;
}

/** One line per problem: the key (labelled from `root`), what was expected, what was found. */
export function formatIssue(issue: z.core.$ZodIssue, root?: unknown): string {
  const at = keyPath(issue.path, root);
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case 'invalid_type':
      return input === undefined
        ? `${at}: is required (expected ${issue.expected})`
        : `${at}: expected ${issue.expected}, got ${describeValue(input)}`;
    case 'invalid_value':
      return `${at}: expected ${issue.values.map((v) => String(v)).join(' | ')}, got ${describeValue(input)}`;
    default:
      return `${at}: ${issue.message}`;
  }
}

/**
 * The issues with a union's (a value or a list of them, like `bridge.tools`) replaced by those
 * of the branch the value took: the one that got past the shape check. `Invalid input` alone
 * would name neither the key nor the problem.
 */
export function branchIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union') return [issue];
    const taken = issue.errors.filter((branch) => branch.some((i) => i.path.length > 0));
    if (taken.length !== 1) return [issue];
    const inner = (taken[0] as z.core.$ZodIssue[]).map((i) => ({
      ...i,
      path: [...issue.path, ...i.path],
    }));
    return branchIssues(inner);
  });
}
