import { z } from 'zod';
import { duration } from './duration-schema.js';
import { parseBytes } from './formats.js';

/**
 * The `journal` key: a path, or `{ path, rotate, keep, keepFor, chain }`. Either way it becomes the
 * object form (docs/journal.md), so that every reader sees one shape.
 */
export interface RawJournal {
  readonly path: string;
  /** Bytes of records beyond its snapshot at which the live file is rotated; 0: never. */
  readonly rotate: number;
  /** Rotated files kept; older ones are deleted once older than `keepFor`. */
  readonly keep: number;
  /** Milliseconds a rotated file is kept at least, whatever `keep` says (evidence). */
  readonly keepFor: number;
  /** Whether each line carries `prev` (off only to measure what the chain costs). */
  readonly chain: boolean;
}

/** The journal's file name in trajgate's data folder when `journal.path` is not given. */
export const DEFAULT_JOURNAL = 'journal.jsonl';

/** Bytes as a number or a string like 256MB (B, KB, MB, GB 1000-based; KiB, MiB, GiB 1024). */
const size = z.union([z.number(), z.string()]).transform((value, ctx): number => {
  const n = typeof value === 'number' ? value : (parseBytes(value, true) ?? NaN);
  // A rotation below 4 KiB would rotate on every few records: surely a missing unit.
  if (Number.isSafeInteger(n) && (n === 0 || n >= 4096)) return n;
  ctx.addIssue({
    code: 'custom',
    message: `expected 0 (no rotation) or a size of at least 4KiB like 256MB, 64MiB or 1GB, got ${JSON.stringify(value)}`,
  });
  return z.NEVER;
});

const object = z.strictObject({
  // Not given: DEFAULT_JOURNAL in trajgate's data folder (config/load.ts dataHome).
  path: z.string().min(1).optional(),
  rotate: size.default(0),
  keep: z.number().int().min(0).default(20),
  // A week: an agent filling the journal cannot rotate its own records out before anyone looks.
  keepFor: duration.default(7 * 86_400_000),
  chain: z.boolean().default(true),
});

/** A plain path is the object form with every default (errors then name `journal.<key>`). */
export const journalSchema = z.preprocess(
  (value) => (value === undefined ? {} : typeof value === 'string' ? { path: value } : value),
  object,
);
