import { createHash } from 'node:crypto';

/**
 * Targets are chosen by agents, so a record's size is theirs to choose: a flood of long URLs
 * would fill the journal and rotate older records out. Past TARGET_BYTES of UTF-8 a record
 * keeps the target's first TARGET_BYTES (cut between characters, still a string every reader
 * takes), with the whole target's length and SHA-256, so the one who holds the whole can prove
 * it is the one that was judged.
 */

/** Bytes of a target kept in a journal record. */
export const TARGET_BYTES = 512;

/** A record's target as journaled: whole, or a prefix with the whole's size and digest. */
export interface JournaledTarget {
  readonly target: string;
  /** UTF-8 bytes of the whole target; present only when `target` is a prefix of it. */
  readonly targetBytes?: number;
  /** SHA-256 (hex) of the whole target's UTF-8; present only with `targetBytes`. */
  readonly targetSha256?: string;
}

const encoder = new TextEncoder();
const scratch = new Uint8Array(TARGET_BYTES);

/** Whether `target` is journaled whole (at most TARGET_BYTES of UTF-8). */
export function fitsWhole(target: string): boolean {
  // Three UTF-8 bytes at most per UTF-16 unit: the common short target is not measured.
  return target.length * 3 <= TARGET_BYTES || Buffer.byteLength(target) <= TARGET_BYTES;
}

export function journaledTarget(target: string): JournaledTarget {
  if (fitsWhole(target)) return { target };
  const whole = Buffer.from(target);
  // encodeInto stops before a character that does not fit whole.
  const { read } = encoder.encodeInto(target, scratch);
  return {
    target: target.slice(0, read),
    targetBytes: whole.length,
    targetSha256: createHash('sha256').update(whole).digest('hex'),
  };
}

/**
 * `record` with its `target` as journaled: the same object when the target fits (the hot
 * path), else a copy. Every record the writer stamps passes here, whatever its type.
 */
export function withJournaledTarget<R extends object>(record: R): R {
  const target = (record as { target?: unknown }).target;
  if (typeof target !== 'string' || fitsWhole(target)) return record;
  return { ...record, ...journaledTarget(target) };
}

/** Whether a record's journaled target stands for `target` (a long one by its digest). */
export function isJournaledTarget(record: JournaledTarget, target: string): boolean {
  const journaled = journaledTarget(target);
  return record.target === journaled.target && record.targetSha256 === journaled.targetSha256;
}
