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
/**
 * Bytes kept of a record's free text (`reason`, `error`, `denied`): trajgate writes them, but
 * they may quote what the agent chose (a host name of thousands of characters, an upstream's
 * error). Past this a text is cut between characters and ends with `…`. Above a runner's
 * result error (1,024 characters, ingest-result.ts), which stays as it is.
 */
export const TEXT_BYTES = 4096;
const TEXTS = ['reason', 'error', 'denied'] as const;

/** A record's target as journaled: whole, or a prefix with the whole's size and digest. */
export interface JournaledTarget {
  readonly target: string;
  /** UTF-8 bytes of the whole target; present only when `target` is a prefix of it. */
  readonly targetBytes?: number;
  /** SHA-256 (hex) of the whole target's UTF-8; present only with `targetBytes`. */
  readonly targetSha256?: string;
}

const encoder = new TextEncoder();
const scratch = new Uint8Array(Math.max(TARGET_BYTES, TEXT_BYTES));

/** Whether `text` is at most `bytes` of UTF-8. */
function fits(text: string, bytes: number): boolean {
  // Three UTF-8 bytes at most per UTF-16 unit: the common short text is not measured.
  return text.length * 3 <= bytes || Buffer.byteLength(text) <= bytes;
}

/** The first `bytes` of `text`'s UTF-8 at most, cut between characters. */
function prefix(text: string, bytes: number): string {
  // encodeInto stops before a character that does not fit whole.
  return text.slice(0, encoder.encodeInto(text, scratch.subarray(0, bytes)).read);
}

/** Whether `target` is journaled whole (at most TARGET_BYTES of UTF-8). */
export const fitsWhole = (target: string): boolean => fits(target, TARGET_BYTES);

export function journaledTarget(target: string): JournaledTarget {
  if (fitsWhole(target)) return { target };
  const whole = Buffer.from(target);
  return {
    target: prefix(target, TARGET_BYTES),
    targetBytes: whole.length,
    targetSha256: createHash('sha256').update(whole).digest('hex'),
  };
}

/**
 * `record` as journaled: its `target` as journaledTarget says, a free text that quotes the whole
 * target quoting the prefix instead (`…` after it), any free text cut at TEXT_BYTES. The same
 * object when all fit (the hot path), else a copy whose fields keep their order. Every record
 * the writer stamps passes here, whatever its type.
 */
export function withJournaledTarget<R extends object>(record: R): R {
  const fields = record as Record<string, unknown>;
  const target = fields.target;
  const long = typeof target === 'string' && !fitsWhole(target);
  if (!long && textsFit(fields)) return record;
  const texts = TEXTS.filter((k) => typeof fields[k] === 'string');
  const out: Record<string, unknown> = { ...fields };
  if (long) Object.assign(out, journaledTarget(target));
  for (const k of texts) {
    let text = fields[k] as string;
    if (long && text.includes(target)) text = text.replaceAll(target, `${out.target}…`);
    out[k] = fits(text, TEXT_BYTES) ? text : `${prefix(text, TEXT_BYTES - 3)}…`;
  }
  return out as R;
}

/** Whether every free text of a record fits (no array or closure: every record asks). */
function textsFit(fields: Record<string, unknown>): boolean {
  for (const k of TEXTS) {
    const text = fields[k];
    if (typeof text === 'string' && !fits(text, TEXT_BYTES)) return false;
  }
  return true;
}
