/** Where each part of the shared trajectory lives in Redis, under the fleet's prefix. */
export class StoreKeys {
  constructor(readonly prefix: string) {}

  /** A session's state: {"v": version, "state": …} (codec.ts). */
  session(id: string): string {
    return `${this.prefix}s:${id}`;
  }

  /** The session's lease, held while one gateway decides for it. */
  lock(id: string): string {
    return `${this.prefix}lock:${id}`;
  }

  /** The session's newest event records, oldest first. */
  recent(id: string): string {
    return `${this.prefix}recent:${id}`;
  }

  /** Every session, scored by when it first had state. */
  get sessions(): string {
    return `${this.prefix}sessions`;
  }

  /** Operators' approvals and deny patterns by id: their journal records. */
  get rules(): string {
    return `${this.prefix}rules`;
  }

  /** Counts changes to `rules`: a decision reads it with the session's state. */
  get rulesVersion(): string {
    return `${this.prefix}rules:v`;
  }

  /** The pub/sub channel of records every gateway must hear of. */
  get bus(): string {
    return `${this.prefix}bus`;
  }

  /**
   * Names this store's contents: set once by the first gateway or by a rebuild. A store that
   * loses it (restarted empty) is noticed, not decided on as if every session were new.
   */
  get epoch(): string {
    return `${this.prefix}epoch`;
  }
}
