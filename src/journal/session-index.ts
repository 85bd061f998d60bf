/**
 * Where each session's newest event records lie in the journal, kept as records are written
 * (the writer's `onAppend`) and rebuilt when the journal is read back at start, so the admin
 * API reads a page of events as the bytes of those lines alone, never by scanning the file.
 *
 * Memory is bounded: per session a ring of at most RING entries (seq and offset as float64,
 * length as uint32, outcome status as uint16: 22 bytes each, 225 KB for a full ring), plus a
 * map entry per re-judged event still in the ring, plus one global checkpoint (16 bytes) per
 * MiB of journal for pages older than a ring, which are read back from the file itself.
 */

const RING = 10_240;
const FIRST = 64;
const CHECKPOINT_BYTES = 1 << 20;

/** What the index needs of a record (stamped or not: its seq is given apart). */
export interface Indexable {
  readonly type: string;
  readonly session?: string | null;
  readonly rid?: number | null;
  readonly status?: number | null;
  readonly handshake?: unknown;
}

/**
 * What a session's event pages list: its events, and the TLS handshakes its agent refused
 * (refusal records with `handshake`), which are no event but what an operator must see.
 */
export function listedWithEvents(record: Indexable): boolean {
  return (
    record.type === 'event' || (record.type === 'refusal' && typeof record.handshake === 'string')
  );
}

/** An event line: its seq, where it starts, its length without the newline, its status. */
export interface Located {
  readonly seq: number;
  readonly offset: number;
  readonly bytes: number;
  /** The status its request ended with (null: ended without one), undefined: not yet. */
  readonly status: number | null | undefined;
}

/** One session's newest events, oldest first, in a ring over growable typed arrays. */
class Ring {
  seq: Float64Array;
  offset: Float64Array;
  bytes: Uint32Array;
  /** 0: no outcome yet, 1: an outcome without status, else status + 2. */
  status: Uint16Array;
  start = 0;
  size = 0;
  /** Entries pushed out: older events exist, in the journal only. */
  dropped = 0;
  /** Re-judged events' seq → their request's first seq, whose outcome they share. */
  readonly rids = new Map<number, number>();

  constructor(readonly capacity: number) {
    const first = Math.min(FIRST, capacity);
    this.seq = new Float64Array(first);
    this.offset = new Float64Array(first);
    this.bytes = new Uint32Array(first);
    this.status = new Uint16Array(first);
  }

  push(seq: number, offset: number, bytes: number, rid: number | undefined): void {
    let cap = this.seq.length;
    if (this.size === cap && cap < this.capacity)
      cap = this.#grow(Math.min(cap * 2, this.capacity));
    let i: number;
    if (this.size < cap) i = (this.start + this.size++) % cap;
    else {
      i = this.start;
      this.rids.delete(this.seq[i] as number);
      this.start = (i + 1) % cap;
      this.dropped++;
    }
    this.seq[i] = seq;
    this.offset[i] = offset;
    this.bytes[i] = bytes;
    this.status[i] = 0;
    if (rid !== undefined) this.rids.set(seq, rid);
  }

  /** Physical slot of the k-th oldest entry. */
  slot(k: number): number {
    return (this.start + k) % this.seq.length;
  }

  /** How many entries have a seq below `seq` (entries are in seq order). */
  below(seq: number): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.seq[this.slot(mid)] as number) < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Slot of the entry with this seq, or -1. */
  find(seq: number): number {
    const k = this.below(seq);
    if (k === this.size) return -1;
    const i = this.slot(k);
    return this.seq[i] === seq ? i : -1;
  }

  located(i: number): Located {
    const rid = this.rids.get(this.seq[i] as number);
    const first = rid === undefined ? -1 : this.find(rid);
    const code = this.status[i] || (first < 0 ? 0 : (this.status[first] as number));
    return {
      seq: this.seq[i] as number,
      offset: this.offset[i] as number,
      bytes: this.bytes[i] as number,
      status: code === 0 ? undefined : code === 1 ? null : code - 2,
    };
  }

  #grow(cap: number): number {
    const old = this.seq.length;
    // Copied oldest first, so the grown ring starts at slot 0.
    const copy = <T extends Float64Array | Uint32Array | Uint16Array>(from: T, to: T): T => {
      for (let k = 0; k < this.size; k++) to[k] = from[(this.start + k) % old] as number;
      return to;
    };
    this.seq = copy(this.seq, new Float64Array(cap));
    this.offset = copy(this.offset, new Float64Array(cap));
    this.bytes = copy(this.bytes, new Uint32Array(cap));
    this.status = copy(this.status, new Uint16Array(cap));
    this.start = 0;
    return cap;
  }
}

/** A page of a session's events as the index can answer it. */
export interface IndexPage {
  /** Newest first, each with seq < before. */
  readonly events: Located[];
  /** The cursor for the next page, or null when there is none. */
  readonly next: number | null;
  /** Older events are only in the journal: read backwards from this offset (events empty). */
  readonly scanFrom: number | null;
}

export class SessionIndex {
  readonly #rings = new Map<string, Ring>();
  #cpSeq = new Float64Array(FIRST);
  #cpOffset = new Float64Array(FIRST);
  #checkpoints = 0;
  #nextCheckpoint = 0;
  /** Records seen: changes whenever anything is journaled. */
  records = 0;
  /** The end of the last line seen: the journal's length as far as the index knows. */
  end = 0;

  /** Events kept per session (RING; smaller in tests). */
  constructor(readonly ring = RING) {}

  /** One record written (or read back) at `offset`, `bytes` long without its newline. */
  add(record: Indexable, seq: number, offset: number, bytes: number): void {
    this.records++;
    this.end = Math.max(this.end, offset + bytes + 1);
    if (offset >= this.#nextCheckpoint) this.#checkpoint(seq, offset);
    if (typeof record.session !== 'string') return;
    if (record.type === 'evict') {
      this.#rings.delete(record.session);
    } else if (listedWithEvents(record)) {
      let ring = this.#rings.get(record.session);
      if (!ring) this.#rings.set(record.session, (ring = new Ring(this.ring)));
      ring.push(seq, offset, bytes, record.rid ?? undefined);
    } else if (record.type === 'outcome' && typeof record.rid === 'number') {
      const ring = this.#rings.get(record.session);
      const i = ring ? ring.find(record.rid) : -1;
      if (ring && i >= 0) {
        const s = record.status;
        ring.status[i] = typeof s === 'number' && s >= 0 && s < 65_534 ? s + 2 : 1;
      }
    }
  }

  /**
   * `events` of the session lie in files before the one the index was built from (a restart
   * from a snapshot): its pages go on into them, read back from the files.
   */
  older(session: string, events: number): void {
    if (events <= 0) return;
    let ring = this.#rings.get(session);
    if (!ring) this.#rings.set(session, (ring = new Ring(this.ring)));
    ring.dropped += events;
  }

  /** Where the event record `seq` lies, while its session's ring still holds it. */
  locate(seq: number): Located | null {
    for (const ring of this.#rings.values()) {
      const i = ring.find(seq);
      if (i >= 0) return ring.located(i);
    }
    return null;
  }

  /** Up to `limit` of the session's events with seq < `before`, newest first. */
  page(session: string, before: number, limit: number): IndexPage {
    const ring = this.#rings.get(session);
    if (!ring) return { events: [], next: null, scanFrom: null };
    const k = ring.below(before);
    if (k === 0) {
      const scanFrom = ring.dropped === 0 ? null : this.#after(before);
      return { events: [], next: null, scanFrom };
    }
    const events: Located[] = [];
    for (let j = k - 1; j >= 0 && events.length < limit; j--) {
      events.push(ring.located(ring.slot(j)));
    }
    const more = k > limit || ring.dropped > 0;
    return { events, next: more ? (events.at(-1) as Located).seq : null, scanFrom: null };
  }

  /**
   * An offset past the line of `seq` by at least one checkpoint interval (the second
   * checkpoint not below it), so that a scan back from there also meets the outcomes
   * written soon after the events it is looking for.
   */
  #after(seq: number): number {
    let lo = 0;
    let hi = this.#checkpoints;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#cpSeq[mid] as number) < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1 >= this.#checkpoints ? this.end : (this.#cpOffset[lo + 1] as number);
  }

  #checkpoint(seq: number, offset: number): void {
    if (this.#checkpoints === this.#cpSeq.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.#cpSeq = grow(this.#cpSeq);
      this.#cpOffset = grow(this.#cpOffset);
    }
    this.#cpSeq[this.#checkpoints] = seq;
    this.#cpOffset[this.#checkpoints++] = offset;
    this.#nextCheckpoint = offset + CHECKPOINT_BYTES;
  }
}
