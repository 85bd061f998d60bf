import type { JournalRecord } from '../journal/records.js';

/** The calls a session may still report a result for, newest last. */
export const CALLS_PER_SESSION = 256;
/** Across sessions: beyond it the oldest session's calls go first. */
export const CALLS_MAX = 16_384;

/** What a call's id names: its request id once judged, or null while it is being judged. */
type Entry = number | null;

/**
 * Runners' calls by their id (`call`, Claude Code's `tool_use_id`), so that a result is linked
 * to the call it reports by that id alone. Bounded: a session keeps its newest
 * CALLS_PER_SESSION, all of them CALLS_MAX; a result for one that went is reported as unknown,
 * which counts as a failure (fail closed), never linked by a guess.
 */
export class HookCalls {
  readonly #sessions = new Map<string, Map<string, Entry>>();
  #size = 0;

  /**
   * Takes the id for a call about to be judged; false when the session already has a call of
   * that id (its result could not say which one it reports).
   */
  open(session: string, call: string): boolean {
    const calls = this.#sessions.get(session);
    if (calls?.has(call)) return false;
    this.#set(session, call, null);
    return true;
  }

  /** The call was judged as request `rid`: its result links to it. */
  judged(session: string, call: string, rid: number): void {
    this.#set(session, call, rid);
  }

  /** The call was not judged (nothing journaled): its id is free again. */
  close(session: string, call: string): void {
    const calls = this.#sessions.get(session);
    if (calls?.delete(call)) this.#removed(session, calls);
  }

  /** The request id of the call its result reports, taken out; undefined when unknown. */
  take(session: string, call: string): number | undefined {
    const calls = this.#sessions.get(session);
    const rid = calls?.get(call);
    if (calls === undefined || rid === undefined) return undefined;
    calls.delete(call);
    this.#removed(session, calls);
    return rid ?? undefined;
  }

  /** A journal record read back at start: calls judged and not yet reported are pending. */
  restore(record: JournalRecord): void {
    if (record.type === 'event' && typeof record.call === 'string' && record.held !== true) {
      this.#set(record.session, record.call, record.rid ?? record.seq);
    } else if (record.type === 'result' && typeof record.call === 'string') {
      this.take(record.session, record.call);
    } else if (record.type === 'evict') {
      this.forget(record.session);
    }
  }

  /**
   * An evicted session's calls go: a result reported for one later names no known call, so it
   * counts as a failure of the session (the strict reading).
   */
  forget(session: string): void {
    this.#size -= this.#sessions.get(session)?.size ?? 0;
    this.#sessions.delete(session);
  }

  #set(session: string, call: string, entry: Entry): void {
    let calls = this.#sessions.get(session);
    if (calls === undefined) this.#sessions.set(session, (calls = new Map()));
    if (!calls.has(call)) this.#size++;
    calls.set(call, entry);
    if (calls.size > CALLS_PER_SESSION) this.#dropOldest(session, calls);
    while (this.#size > CALLS_MAX) {
      const [oldest, its] = this.#sessions.entries().next().value as [string, Map<string, Entry>];
      this.#dropOldest(oldest, its);
    }
  }

  #dropOldest(session: string, calls: Map<string, Entry>): void {
    calls.delete(calls.keys().next().value as string);
    this.#removed(session, calls);
  }

  #removed(session: string, calls: Map<string, Entry>): void {
    this.#size--;
    if (calls.size === 0) this.#sessions.delete(session);
  }
}
