import { z } from 'zod';
import { OWN_BOUNDARIES } from '../event/own-boundaries.js';
import { describeValue } from '../event/validate.js';
import { bytes, checkNames, RULE_NAME, windowDuration } from './sequences-schema.js';

/**
 * `policy.budgets` (docs/rules.md#budgets): per session and window, how many requests, bytes
 * sent up, tool calls or distinct hosts it may use before `verdict`; an operator tops one up.
 */
export const MEASURES = ['requests', 'bytesUp', 'toolCalls', 'hosts'] as const;
export type Measure = (typeof MEASURES)[number];

const count = z.unknown().transform((value, ctx): { n: number; text: string } => {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1)
    return { n: value, text: String(value) };
  ctx.addIssue({
    code: 'custom',
    message: `expected a whole number of at least 1, got ${describeValue(value)}`,
  });
  return z.NEVER;
});

const budget = z
  .strictObject({
    name: z
      .string()
      .regex(RULE_NAME, 'a budget name uses only letters, digits, ., _ and - (at most 64)'),
    requests: count.optional(),
    bytesUp: bytes.optional(),
    toolCalls: count.optional(),
    hosts: count.optional(),
    within: windowDuration,
    verdict: z.enum(['REVIEW', 'PAUSE']).default('PAUSE'),
  })
  .check(z.superRefine(checkMeasure, { when: () => true }));

export type RawBudget = z.output<typeof budget>;

/** Exactly one measure: a budget of two would leave which one paused unclear. */
function checkMeasure(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  const given = MEASURES.filter((m) => (value as Record<string, unknown>)[m] !== undefined);
  if (given.length === 1) return;
  ctx.addIssue({
    code: 'custom',
    path: given.length === 0 ? [] : [given[1] as string],
    message:
      given.length === 0
        ? `needs one measure: ${MEASURES.join(', ')}`
        : `takes one measure, got ${given.join(' and ')} (write one budget for each)`,
  });
}

export const budgetsSchema = z
  .array(budget)
  .max(32, 'at most 32 budgets')
  .check(z.superRefine((v, ctx) => checkNames(v, ctx, 'policy.budgets'), { when: () => true }))
  .default([]);

/** A budget's name is what its pause names (`rule`): no boundary or rule may share it. */
export function checkBudgetNames(
  budgets: readonly RawBudget[],
  taken: ReadonlyMap<string, string>,
  ctx: z.RefinementCtx,
): void {
  budgets.forEach((b, i) => {
    const clash = OWN_BOUNDARIES.has(b.name) ? "trajgate's own boundary" : taken.get(b.name);
    if (clash === undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: ['policy', 'budgets', i, 'name'],
      message: `is ${clash}: name it otherwise`,
    });
  });
}
