/** The calls of one session: those running, whether one runs alone, those waiting (in order). */
interface Lane {
  running: number;
  alone: boolean;
  readonly waiting: { readonly alone: boolean; readonly start: () => void }[];
}

/**
 * Orders each session's tool calls between judging and the server's answer. A call that may
 * change the tree (a write, a command, an unknown tool) runs alone: the next call is judged
 * only once its result is back, so an agent cannot race its own `move_file` against its
 * `write_file` between trajgate's check and the server's act. Reads run together, but not
 * beside a change (a read judged before a move could otherwise read where the move led).
 * First come, first served: a waiting change is not overtaken by later reads.
 */
export class SessionOrder {
  readonly #lanes = new Map<string, Lane>();

  /** Resolves when the call may be judged and sent, with the function that ends its turn. */
  enter(session: string, alone: boolean): Promise<() => void> {
    let lane = this.#lanes.get(session);
    if (lane === undefined) {
      lane = { running: 0, alone: false, waiting: [] };
      this.#lanes.set(session, lane);
    }
    const entered = lane;
    return new Promise((resolve) => {
      entered.waiting.push({
        alone,
        start: () => {
          let done = false;
          resolve(() => {
            if (done) return;
            done = true;
            this.#leave(session, entered);
          });
        },
      });
      this.#next(entered);
    });
  }

  /** Runs `fn` in the session's order (see enter). */
  async run<T>(session: string, alone: boolean, fn: () => Promise<T>): Promise<T> {
    const leave = await this.enter(session, alone);
    try {
      return await fn();
    } finally {
      leave();
    }
  }

  #next(lane: Lane): void {
    for (let head = lane.waiting[0]; head !== undefined; head = lane.waiting[0]) {
      if (lane.alone || (head.alone && lane.running > 0)) return;
      lane.waiting.shift();
      lane.running++;
      lane.alone = head.alone;
      head.start();
    }
  }

  #leave(session: string, lane: Lane): void {
    lane.running--;
    if (lane.running === 0) lane.alone = false;
    if (lane.running === 0 && lane.waiting.length === 0) this.#lanes.delete(session);
    else this.#next(lane);
  }
}
