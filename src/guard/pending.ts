/** An event that marks `rules` if its outcome is a failure; `rid`: its request id. */
export interface Pending {
  readonly rid: number;
  readonly seq: number;
  readonly eventNo: number;
  readonly ts: number;
  readonly kind: string;
  readonly target: string;
  readonly rules: readonly string[];
}

/** A session's events waiting for their outcome: the newest PENDING_MAX, oldest first. */
export interface PendingEvents {
  readonly size: number;
  /** The newest waiting event of request `rid` (one judged again after a hold may be twice). */
  find(rid: number): Pending | undefined;
  values(): Pending[];
}

/** The newest events kept waiting for an outcome. */
export const PENDING_MAX = 64;

const NUMS = 4;
const REFS = 3;

/**
 * PendingEvents in a fixed ring of plain fields. With a rule that waits for failures every
 * event waits, across every session: an object kept per event would outlive the young
 * generation and make each one cost a full collection; the ring keeps none.
 */
export class PendingRing implements PendingEvents {
  #start = 0;
  #size = 0;
  /** rid, seq, eventNo, ts per slot. */
  readonly #num = new Float64Array(PENDING_MAX * NUMS);
  /** kind, target, rules per slot: one cache line touched per push, not three. */
  readonly #ref: (string | readonly string[])[] = new Array(PENDING_MAX * REFS).fill('');

  get size(): number {
    return this.#size;
  }

  /** Adds `p`, replacing the newest if it is of the same request (harmless twice). */
  push(p: Pending): void {
    let slot = (this.#start + this.#size - 1) % PENDING_MAX;
    if (this.#size === 0 || this.#num[slot * NUMS] !== p.rid) {
      slot = (this.#start + this.#size) % PENDING_MAX;
      if (this.#size < PENDING_MAX) this.#size++;
      else this.#start = (this.#start + 1) % PENDING_MAX;
    }
    const at = slot * NUMS;
    this.#num[at] = p.rid;
    this.#num[at + 1] = p.seq;
    this.#num[at + 2] = p.eventNo;
    this.#num[at + 3] = p.ts;
    const ref = slot * REFS;
    this.#ref[ref] = p.kind;
    this.#ref[ref + 1] = p.target;
    this.#ref[ref + 2] = p.rules;
  }

  find(rid: number): Pending | undefined {
    for (let i = this.#size - 1; i >= 0; i--) {
      const slot = (this.#start + i) % PENDING_MAX;
      if (this.#num[slot * NUMS] === rid) return this.#at(slot);
    }
    return undefined;
  }

  /** Drops every waiting event of request `rid` (its outcome came). */
  remove(rid: number): void {
    const kept = this.values().filter((p) => p.rid !== rid);
    if (kept.length === this.#size) return;
    this.clear();
    for (const p of kept) this.push(p);
  }

  clear(): void {
    this.#start = 0;
    this.#size = 0;
    this.#ref.fill('');
  }

  values(): Pending[] {
    const out: Pending[] = [];
    for (let i = 0; i < this.#size; i++) out.push(this.#at((this.#start + i) % PENDING_MAX));
    return out;
  }

  #at(slot: number): Pending {
    const n = this.#num;
    const at = slot * NUMS;
    return {
      rid: n[at] as number,
      seq: n[at + 1] as number,
      eventNo: n[at + 2] as number,
      ts: n[at + 3] as number,
      kind: this.#ref[slot * REFS] as string,
      target: this.#ref[slot * REFS + 1] as string,
      rules: this.#ref[slot * REFS + 2] as readonly string[],
    };
  }
}

/** A session nothing waits in. */
export const NO_PENDING: PendingEvents = {
  size: 0,
  find: () => undefined,
  values: () => [],
};
