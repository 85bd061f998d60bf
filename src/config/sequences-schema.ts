import { z } from 'zod';
import { PATH_KINDS } from '../event/event.js';
import { parseNetworkPattern } from '../event/network-pattern.js';
import { describeValue } from '../event/validate.js';
import { parseBytes, parseDuration } from './formats.js';

/**
 * `policy.sequences`: trajectory rules (docs/rules.md). An `after`/`then` rule makes
 * an event matching `then` answer `verdict` while an earlier one matching `after` is `within`
 * reach; a `volume` rule, once the session has sent `up` bytes within its window. Errors name
 * the rule: list items with a `name` are labelled in key paths (config/issues.ts).
 */
export const MATCHERS = ['kind', 'target', 'failed', 'refused', 'crossing', 'approved'] as const;

const KIND = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
export const RULE_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const EVENTS = /^(\d+) events?$/;
/** A rule's `within`: a number of the session's events, or a time in ms; `text` as written. */
export type Within =
  | { readonly events: number; readonly text: string }
  | { readonly ms: number; readonly text: string };

/** A matcher: every condition given must hold. */
export interface RawMatcher {
  readonly kind?: string[] | undefined;
  readonly target?: string[] | undefined;
  readonly failed?: boolean | undefined;
  readonly refused?: boolean | undefined;
  readonly crossing?: string | undefined;
  readonly approved?: boolean | undefined;
}

const kind = z
  .string()
  .regex(KIND, 'a kind must start with a letter and use only letters, digits, _ and -');

const matcher = z
  .looseObject({
    kind: z
      .union([kind, z.array(kind).min(1)])
      .transform((k) => [k].flat())
      .optional(),
    target: z.array(z.string().min(1)).min(1).optional(),
    failed: z.boolean().optional(),
    refused: z.boolean().optional(),
    crossing: z.string().min(1).optional(),
    approved: z.boolean().optional(),
  })
  .transform((m, ctx): RawMatcher => {
    for (const key of Object.keys(m)) {
      if ((MATCHERS as readonly string[]).includes(key)) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `unknown matcher (known: ${MATCHERS.join(', ')})`,
      });
    }
    const { kind, target, failed, refused, crossing, approved } = m;
    checkTargets(kind, target, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    return { kind, target, failed, refused, crossing, approved };
  });

const within = z.unknown().transform((text, ctx): Within => {
  const bad = () => {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like 1h or "N events", got ${describeValue(text)}`,
    });
    return z.NEVER;
  };
  if (typeof text !== 'string') return bad();
  const n = EVENTS.exec(text.trim());
  if (n) return Number(n[1]) >= 1 ? { events: Number(n[1]), text } : bad();
  const ms = parseDuration(text);
  return ms === undefined || ms <= 0 ? bad() : { ms, text };
});

export const bytes = z.unknown().transform((value, ctx): { n: number; text: string } => {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1)
    return { n: value, text: `${value}B` };
  const n = (typeof value === 'string' ? parseBytes(value) : undefined) ?? 0;
  if (n >= 1) return { n, text: value as string };
  ctx.addIssue({
    code: 'custom',
    message: `expected bytes like 10MB, 512KiB or 1GB (B, KB, MB, GB are 1000-based; KiB, MiB, GiB 1024-based), got ${describeValue(value)}`,
  });
  return z.NEVER;
});

export const windowDuration = z.unknown().transform((value, ctx): { ms: number; text: string } => {
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  if (ms !== undefined && ms > 0) return { ms, text: value as string };
  ctx.addIssue({
    code: 'custom',
    message: `expected a duration like 30s, 10m or 1h, got ${describeValue(value)}`,
  });
  return z.NEVER;
});

const rule = z
  .strictObject({
    name: z
      .string()
      .regex(RULE_NAME, 'a rule name uses only letters, digits, ., _ and - (at most 64)'),
    verdict: z.enum(['REVIEW', 'PAUSE']),
    after: matcher.optional(),
    then: matcher.optional(),
    within: within.optional(),
    volume: z.strictObject({ up: bytes, within: windowDuration }).optional(),
  })
  // Checked on what was given even when other keys are wrong: every problem at once.
  .check(z.superRefine(checkShape, { when: () => true }));

export type RawSequence = z.output<typeof rule>;

/** after + then, or volume (with or without then): each rule says which it is. */
function checkShape(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  const r = value as Record<string, unknown>;
  const at = (key: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [key], message });
  if (r.volume !== undefined) {
    if (r.after !== undefined)
      at('after', 'a volume rule takes no "after" (write after + then, or volume)');
    if (r.within !== undefined) at('within', 'a volume rule’s window is volume.within');
  } else {
    if (r.after === undefined)
      at('after', 'is required: the earlier event (or write a volume rule)');
    if (r.then === undefined) at('then', 'is required: the later event the rule judges');
  }
}

/**
 * Targets are read as a boundary's are: network patterns for network events, globs for the
 * rest. When the kinds say which, each target must be of that form: a network pattern that
 * does not parse, or a path glob that can never match an absolute path, is an error.
 */
function checkTargets(
  kinds: readonly string[] | undefined,
  targets: readonly string[] | undefined,
  at: (path: PropertyKey[], message: string) => void,
): void {
  if (targets === undefined || kinds === undefined) return;
  const paths = kinds.every((k) => PATH_KINDS.has(k));
  targets.forEach((t, i) => {
    if (kinds.includes('network')) {
      try {
        parseNetworkPattern(t);
      } catch (err) {
        at(['target', i], (err as Error).message);
      }
    } else if (paths && !t.startsWith('/') && !t.startsWith('*')) {
      at(
        ['target', i],
        `a path glob must start with / or * (paths are matched absolute, e.g. **/.ssh/**), got ${JSON.stringify(t)}`,
      );
    }
  });
}

/** Two rules with one name: the second is the error, naming the first (`key`: the list's). */
export function checkNames(value: unknown, ctx: z.RefinementCtx, key = 'policy.sequences'): void {
  if (!Array.isArray(value)) return;
  const seen = new Map<string, number>();
  value.forEach((r: unknown, i) => {
    const name = (r as { name?: unknown } | null)?.name;
    if (typeof name !== 'string') return;
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else
      ctx.addIssue({
        code: 'custom',
        path: [i, 'name'],
        message: `duplicates ${key}[${first}] (${name})`,
      });
  });
}

export const sequencesSchema = z
  .array(rule)
  .max(32, 'at most 32 rules')
  .check(z.superRefine(checkNames, { when: () => true }))
  .default([]);

/** `crossing` must name a boundary: `known` are the configured ones. */
export function checkCrossings(
  rules: readonly RawSequence[],
  known: readonly string[],
  ctx: z.RefinementCtx,
): void {
  rules.forEach((r, i) => {
    for (const side of ['after', 'then'] as const) {
      const b = r[side]?.crossing;
      if (b === undefined || known.includes(b)) continue;
      ctx.addIssue({
        code: 'custom',
        path: ['policy', 'sequences', i, side, 'crossing'],
        message: `no boundary ${JSON.stringify(b)} (boundaries: ${known.join(', ')})`,
      });
    }
  });
}
