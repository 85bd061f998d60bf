/**
 * An Aho–Corasick automaton over bytes, compiled to a full transition table so that one step is
 * one array read, whatever the number of needles (Aho & Corasick, CACM 18(6), 1975). Bytes that
 * occur in no needle map to no column: they send every state back to the root.
 */
export class AhoCorasick {
  /** Column of each byte plus one; 0 where the byte is in no needle. */
  private readonly column = new Uint8Array(256);
  private readonly width: number;
  private readonly next: Uint32Array;
  /** The needles (by index) that end at each state, own and through failure links. */
  private readonly ends: (readonly number[] | null)[];
  /** Each needle's length, by index. */
  readonly lengths: readonly number[];

  constructor(needles: readonly Uint8Array[]) {
    this.lengths = needles.map((n) => n.length);
    let width = 0;
    for (const needle of needles) {
      if (needle.length === 0) throw new RangeError('an empty needle matches everywhere');
      for (const b of needle) if (this.column[b] === 0) this.column[b] = ++width;
    }
    this.width = width;
    const trie: Map<number, number>[] = [new Map()];
    const own: number[][] = [[]];
    needles.forEach((needle, index) => {
      let state = 0;
      for (const b of needle) {
        const c = this.column[b]! - 1;
        let child = trie[state]!.get(c);
        if (child === undefined) {
          child = trie.length;
          trie.push(new Map());
          own.push([]);
          trie[state]!.set(c, child);
        }
        state = child;
      }
      own[state]!.push(index);
    });
    this.next = new Uint32Array(trie.length * width);
    this.ends = own.map((list) => (list.length > 0 ? list : null));
    // Breadth first, so a state's failure target is complete before the state is.
    const fail = new Uint32Array(trie.length);
    const queue: number[] = [];
    for (const [c, child] of trie[0]!) {
      this.next[c] = child;
      queue.push(child);
    }
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head]!;
      const inherited = this.ends[fail[state]!];
      if (inherited) this.ends[state] = [...(this.ends[state] ?? []), ...inherited];
      for (let c = 0; c < width; c++) {
        const child = trie[state]!.get(c);
        const viaFail = this.next[fail[state]! * width + c]!;
        if (child === undefined) {
          this.next[state * width + c] = viaFail;
        } else {
          this.next[state * width + c] = child;
          fail[child] = viaFail;
          queue.push(child);
        }
      }
    }
  }

  /** The state after `byte` from `state` (0 is the root). */
  step(state: number, byte: number): number {
    const c = this.column[byte]!;
    return c === 0 ? 0 : this.next[state * this.width + c - 1]!;
  }

  /**
   * Runs over `bytes` from index `from` to `to` starting in `state` and answers the state after
   * them, calling `found` with each state where a needle ends and the byte's index.
   */
  run(
    state: number,
    bytes: Uint8Array,
    from: number,
    to: number,
    found: (state: number, at: number) => void,
  ): number {
    const { column, next, width, ends } = this;
    for (let i = from; i < to; i++) {
      const c = column[bytes[i]!]!;
      state = c === 0 ? 0 : next[state * width + c - 1]!;
      if (ends[state] !== null) found(state, i);
    }
    return state;
  }

  /** The indexes of the needles that end at `state`, or null. */
  matches(state: number): readonly number[] | null {
    return this.ends[state]!;
  }
}
