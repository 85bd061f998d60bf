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

/**
 * Bytes of a command line kept in a record, counted as the journal writes them (JSON-escaped
 * UTF-8): a line of control characters takes six bytes each, and a record stays well under
 * 12 KB whatever the agent ran.
 */
export const COMMAND_BYTES = 2048;

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

/** The UTF-8 size and SHA-256 of a text journaled as its prefix. */
function whole(text: string): { bytes: number; sha256: string } {
  const bytes = Buffer.from(text);
  return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

export function journaledTarget(target: string): JournaledTarget {
  if (fitsWhole(target)) return { target };
  const { bytes, sha256 } = whole(target);
  return { target: prefix(target, TARGET_BYTES), targetBytes: bytes, targetSha256: sha256 };
}

/** A record's command line as journaled: whole, or a prefix with the whole's size and digest. */
export interface JournaledCommand {
  readonly command: string;
  /** UTF-8 bytes of the whole command line; present only when `command` is a prefix of it. */
  readonly commandBytes?: number;
  /** SHA-256 (hex) of the whole command line's UTF-8; present only with `commandBytes`. */
  readonly commandSha256?: string;
}

/** Whether `command` is journaled whole (at most COMMAND_BYTES as JSON writes it). */
const commandFits = (command: string): boolean =>
  command.length * 6 <= COMMAND_BYTES || jsonPrefixEnd(command, COMMAND_BYTES) === command.length;

export function journaledCommand(command: string): JournaledCommand {
  if (commandFits(command)) return { command };
  const { bytes, sha256 } = whole(command);
  const kept = command.slice(0, jsonPrefixEnd(command, COMMAND_BYTES));
  return { command: kept, commandBytes: bytes, commandSha256: sha256 };
}

/**
 * How many UTF-16 units of `text` fit in `bytes` as JSON.stringify writes them (escapes
 * counted, UTF-8), cut between characters.
 */
function jsonPrefixEnd(text: string, bytes: number): number {
  let used = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = jsonSize(c, pair);
    if (used + size > bytes) return i;
    used += size;
    if (pair) i++;
  }
  return text.length;
}

/** `\b \t \n \f \r`: the controls JSON writes in two characters (the rest as `\u00XX`). */
const SHORT_ESCAPES: ReadonlySet<number> = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** UTF-8 bytes of one UTF-16 unit (or a surrogate pair) as JSON.stringify writes it. */
function jsonSize(c: number, pair: boolean): number {
  if (c === 0x22 || c === 0x5c) return 2;
  if (c < 0x20) return SHORT_ESCAPES.has(c) ? 2 : 6;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (pair) return 4;
  // A lone surrogate is written `\udXXX`.
  return c >= 0xd800 && c <= 0xdfff ? 6 : 3;
}

/**
 * `record` as journaled: its `target` as journaledTarget says, its `command` as
 * journaledCommand says, a free text that quotes the whole target quoting the prefix instead
 * (`…` after it), any free text cut at TEXT_BYTES. The same object when all fit (the hot path),
 * else a copy whose fields keep their order. Every record the writer stamps passes here,
 * whatever its type.
 */
export function withJournaledTarget<R extends object>(record: R): R {
  const fields = record as Record<string, unknown>;
  const target = fields.target;
  const long = typeof target === 'string' && !fitsWhole(target);
  const command = fields.command;
  const longCommand = typeof command === 'string' && !commandFits(command);
  if (!long && !longCommand && textsFit(fields)) return record;
  const texts = TEXTS.filter((k) => typeof fields[k] === 'string');
  const out: Record<string, unknown> = { ...fields };
  if (long) Object.assign(out, journaledTarget(target));
  if (longCommand) Object.assign(out, journaledCommand(command));
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
