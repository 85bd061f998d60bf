import type { Hash } from 'node:crypto';
import { createHash } from 'node:crypto';
import { TrajgateError } from '../errors.js';
import type { SnapshotRecord } from './records.js';

/**
 * A version 2 snapshot is many lines: one `snapshot-part` line per session (no seq, no prev),
 * then the head, a `snapshot` record whose `parts` counts those lines and whose `digest` is the
 * SHA-256 of their bytes, newlines included (the file's bytes before the head). This module
 * reads them back as the one snapshot record a version 1 file holds in its first line.
 */
export const PART = 'snapshot-part';
const LEAD = Buffer.from(`{"type":"${PART}"`);

/** The snapshot versions this trajgate reads: 1 (one line) and 2 (parts, then a head). */
const VERSIONS: readonly unknown[] = [1, 2];

/** Whether this trajgate reads snapshots of `version`. */
export function knownVersion(version: unknown): boolean {
  return VERSIONS.includes(version);
}

/** A snapshot `version` this trajgate reads, or E_JOURNAL_CORRUPT saying which it reads. */
export function checkVersion(version: unknown, hint = ''): void {
  if (!knownVersion(version))
    throw new TrajgateError(
      'E_JOURNAL_CORRUPT',
      `snapshot version ${JSON.stringify(version)} is not one this trajgate reads (${VERSIONS.join(', ')})${hint}`,
    );
}

/** Whether a line is a snapshot part (the writer puts its type first: no parse needed). */
export function isPart(line: Buffer | string): boolean {
  return typeof line === 'string'
    ? line.startsWith(LEAD.toString())
    : line.length >= LEAD.length && line.compare(LEAD, 0, LEAD.length, 0, LEAD.length) === 0;
}

/** What a part line says of its session; `gone`: evicted after an earlier part was written. */
interface PartLine {
  readonly type: typeof PART;
  readonly session: string;
  readonly gone?: true;
}

/**
 * The leading part lines of one file, gathered until the head: counted and hashed, and (with
 * `keep`) parsed into one entry per session, a later part replacing an earlier one in place and
 * a `gone` part removing it, so sessions keep the order they first appeared in.
 */
export class SnapshotParts {
  readonly #hash: Hash = createHash('sha256');
  readonly #kept: Map<string, object> | null;
  #lines = 0;

  constructor({ keep }: { keep: boolean }) {
    this.#kept = keep ? new Map() : null;
  }

  /** Part lines seen so far. */
  get lines(): number {
    return this.#lines;
  }

  /** One part line (its bytes without the newline); one that cannot be a part throws. */
  add(line: Buffer | string): void {
    this.#lines++;
    this.#hash.update(line);
    this.#hash.update('\n');
    if (this.#kept === null) return;
    let part: PartLine;
    try {
      part = JSON.parse(line.toString()) as PartLine;
    } catch {
      throw new TrajgateError('E_JOURNAL_CORRUPT', 'a snapshot part that is not valid JSON');
    }
    if (typeof part !== 'object' || part === null || typeof part.session !== 'string')
      throw new TrajgateError('E_JOURNAL_CORRUPT', 'a snapshot part needs a string "session"');
    if (part.gone === true) {
      this.#kept.delete(part.session);
      return;
    }
    const { type: _type, session, ...rest } = part;
    this.#kept.set(session, rest);
  }

  /**
   * Why `head` does not seal the parts read (its count or digest differs: a part line edited,
   * removed or inserted), or null when it does.
   */
  mismatch(head: { parts?: unknown; digest?: unknown }): string | null {
    if (head.parts !== this.#lines)
      return `the snapshot's head counts ${JSON.stringify(head.parts)} part line(s), ${this.#lines} precede it (a part line removed or inserted)`;
    if (head.digest !== this.#hash.copy().digest('hex'))
      return "the snapshot's part lines do not match its head's digest (a part line edited)";
    return null;
  }

  /** The head with the parts folded into its state as `parts`: [session, part][]. */
  record(head: SnapshotRecord): SnapshotRecord {
    const state = head.state as Record<string, unknown>;
    return { ...head, state: { ...state, parts: [...(this.#kept ?? [])] } };
  }
}

/**
 * The one snapshot record a file's leading `parts` and their `head` make; a version 1 head
 * (no parts) as it is, a head of a version not known as it is (its reader refuses it). Throws
 * (a reason) when the head does not seal those parts.
 */
export function assemble(head: SnapshotRecord, parts: SnapshotParts): SnapshotRecord {
  if (!knownVersion(head.version) || (parts.lines === 0 && !('parts' in head))) return head;
  const why = parts.mismatch(head);
  if (why !== null) throw new Error(why);
  return parts.record(head);
}
