import { z } from 'zod';
import type { ToolLists } from '../event/tool-policy.js';
import { toolPatternProblem } from '../event/tool-policy.js';

/** A tool pattern (`GLOB` or `SERVER:GLOB`), checked here so a bad one names its key. */
const toolPattern = z.string().superRefine((s, ctx) => {
  const problem = toolPatternProblem(s);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

const patterns = z.array(toolPattern);

/** `agents[].tools` and `roles.NAME.tools`: the tools allowed, and those denied whatever allows. */
export const toolLists = z
  .strictObject({ allow: patterns.default([]), deny: patterns.default([]) })
  .prefault({});

/** A list of tool patterns, not of event mappings: no element is an object. */
const isPatternList = (value: unknown): boolean =>
  Array.isArray(value) && !value.some((v) => typeof v === 'object' && v !== null);

/**
 * `bridge.tools`: tool name → event mapping, as before, and the keys `allow` and `deny` holding
 * a list of tool patterns (not objects), which are the policy. So every config written before
 * the policy existed keeps its meaning, a tool named `allow` mapped by an event object included.
 * Output: `{ map, lists }`; the bridge schema splits them (`tools`, `toolPolicy`).
 */
export function bridgeToolsSchema<M extends z.ZodType>(mapping: M) {
  return z
    .record(z.string().min(1), z.unknown())
    .default({})
    .transform((given, ctx) => {
      const map: Record<string, z.output<M>> = {};
      const lists: { allow: string[]; deny: string[] } = { allow: [], deny: [] };
      for (const [key, value] of Object.entries(given)) {
        const policy = (key === 'allow' || key === 'deny') && isPatternList(value);
        const parsed = (policy ? patterns : mapping).safeParse(value, { reportInput: true });
        if (!parsed.success) {
          for (const issue of parsed.error.issues)
            ctx.addIssue({ ...issue, path: [key, ...issue.path] } as z.core.$ZodRawIssue);
        } else if (policy) lists[key as keyof ToolLists] = parsed.data as string[];
        else map[key] = parsed.data as z.output<M>;
      }
      return { map, lists };
    });
}
