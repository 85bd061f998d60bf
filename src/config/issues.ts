import type { z } from 'zod';
import { describeValue } from '../event/validate.js';

/** `policy.boundaries.deploy.kinds[0]`: the key path users see in their YAML. */
export function keyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(top level)' : out;
}

/** One line per problem: the key, what was expected, what was found. */
export function formatIssue(issue: z.core.$ZodIssue): string {
  const at = keyPath(issue.path);
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
