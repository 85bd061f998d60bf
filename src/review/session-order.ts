/**
 * The sessions list's order, kept as sessions change: paused first, then flagged, then active,
 * each newest activity first (ties by id). One sorted list of blocks per state, so that a move
 * (new activity, a pause, a flag) costs a binary search and a splice of one block, and a page
 * after a cursor a binary search and the rows it returns (a search: the sessions it looks at,
 * bounded per call), however many sessions there are.
 */

/** 2: paused, 1: flagged, 0: active (the list's sections, highest first). */
export type Rank = 0 | 1 | 2;

/** Where a session sorts: its section and its last activity (ms; 0 for none yet). */
export interface Key {
  readonly rank: Rank;
  readonly at: number;
}

/** A position in the order: the last row a page returned. Valid however sessions move. */
export interface Cursor extends Key {
  readonly id: string;
}

interface Entry {
  readonly id: string;
  readonly at: number;
}

/** Rows per block before it splits in two: a splice moves at most this many. */
const BLOCK = 512;

/** Newest first, then by id: negative when `a` comes before `b`. */
function compare(a: Entry, b: Entry): number {
  return b.at - a.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** One section: sorted blocks, none empty. */
class Blocks {
  readonly #blocks: Entry[][] = [];
  size = 0;

  insert(entry: Entry): void {
    const [b, i] = this.#locate(entry, 0);
    const block = this.#blocks[b];
    if (block === undefined) {
      this.#blocks.push([entry]);
    } else {
      block.splice(i, 0, entry);
      if (block.length > BLOCK) this.#blocks.splice(b + 1, 0, block.splice(BLOCK / 2));
    }
    this.size++;
  }

  delete(entry: Entry): void {
    const [b, i] = this.#locate(entry, 0);
    const block = this.#blocks[b];
    if (block?.[i]?.id !== entry.id) return;
    block.splice(i, 1);
    if (block.length === 0) this.#blocks.splice(b, 1);
    this.size--;
  }

  /** Fills an empty section with entries already in order. */
  fill(sorted: readonly Entry[]): void {
    for (let i = 0; i < sorted.length; i += BLOCK / 2)
      this.#blocks.push(sorted.slice(i, i + BLOCK / 2));
    this.size = sorted.length;
  }

  /** The entries after `from` (from the start when null), in order. */
  *after(from: Entry | null): Generator<Entry> {
    let [b, i] = from === null ? [0, 0] : this.#locate(from, 1);
    for (; b < this.#blocks.length; b++, i = 0) {
      const block = this.#blocks[b] as Entry[];
      for (; i < block.length; i++) yield block[i] as Entry;
    }
  }

  /**
   * The first position whose entry is not before `entry` (`strict` 0), or after it (1):
   * a binary search over the blocks' last entries, then within the block.
   */
  #locate(entry: Entry, strict: 0 | 1): [number, number] {
    const blocks = this.#blocks;
    const before = (e: Entry) => compare(e, entry) < strict;
    let lo = 0;
    let hi = blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const block = blocks[mid] as Entry[];
      if (before(block[block.length - 1] as Entry)) lo = mid + 1;
      else hi = mid;
    }
    const block = blocks[lo];
    if (block === undefined) {
      // Past every entry: the end of the last block (an insert appends there).
      const last = blocks[blocks.length - 1];
      return strict === 0 && last ? [blocks.length - 1, last.length] : [blocks.length, 0];
    }
    let i = 0;
    let j = block.length;
    while (i < j) {
      const mid = (i + j) >> 1;
      if (before(block[mid] as Entry)) i = mid + 1;
      else j = mid;
    }
    return [lo, i];
  }
}

export class SessionOrder {
  readonly #keys = new Map<string, Key>();
  readonly #sections: [Blocks, Blocks, Blocks] = [new Blocks(), new Blocks(), new Blocks()];

  /** Places the session (new or moved). */
  set(id: string, key: Key): void {
    const old = this.#keys.get(id);
    if (old?.rank === key.rank && old.at === key.at) return;
    if (old) this.#sections[old.rank].delete({ id, at: old.at });
    this.#sections[key.rank].insert({ id, at: key.at });
    this.#keys.set(id, { rank: key.rank, at: key.at });
  }

  /** Fills the order at once (a start, when it is empty): one sort, not a move per session. */
  load(keys: Iterable<readonly [string, Key]>): void {
    if (this.#keys.size > 0) throw new Error('SessionOrder.load: the order is not empty');
    for (const [id, key] of keys) this.#keys.set(id, { rank: key.rank, at: key.at });
    const sections: Entry[][] = [[], [], []];
    for (const [id, key] of this.#keys) sections[key.rank]?.push({ id, at: key.at });
    sections.forEach((entries, rank) => this.#sections[rank as Rank].fill(entries.sort(compare)));
  }

  /** Forgets the session (evicted, or no longer known); false when it was not listed. */
  remove(id: string): boolean {
    const old = this.#keys.get(id);
    if (!old) return false;
    this.#sections[old.rank].delete({ id, at: old.at });
    return this.#keys.delete(id);
  }

  key(id: string): Key | undefined {
    return this.#keys.get(id);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** How many sessions the section holds. */
  count(rank: Rank): number {
    return this.#sections[rank].size;
  }

  /**
   * Up to `limit` ids of the sections `ranks` in list order, after `cursor` (from the start
   * when null), those `match` keeps, looking at `scan` sessions at most; `next`: the cursor of
   * the last one looked at, null when nothing follows.
   */
  page(
    ranks: ReadonlySet<Rank>,
    cursor: Cursor | null,
    limit: number,
    match: ((id: string) => boolean) | null = null,
    scan = Infinity,
  ): { ids: string[]; next: Cursor | null } {
    const ids: string[] = [];
    let last = cursor;
    let seen = 0;
    for (const rank of [2, 1, 0] as const) {
      if (!ranks.has(rank) || (cursor !== null && rank > cursor.rank)) continue;
      const from = cursor !== null && rank === cursor.rank ? cursor : null;
      for (const entry of this.#sections[rank].after(from)) {
        // Another session follows: the next page starts after the last one looked at.
        if (ids.length === limit || seen === scan) return { ids, next: last };
        seen++;
        last = { rank, at: entry.at, id: entry.id };
        if (match === null || match(entry.id)) ids.push(entry.id);
      }
    }
    return { ids, next: null };
  }
}
