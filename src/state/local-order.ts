/**
 * One queue per session within this process: a task starts once the ones queued before it for
 * the same session called `done`, so this gateway's own decisions of one session do not race
 * each other for the shared lease, and a message is published after the write it announces.
 */
export class LocalOrder {
  readonly #tails = new Map<string, Promise<void>>();

  run<T>(id: string, task: (done: () => void) => Promise<T>): Promise<T> {
    const before = this.#tails.get(id);
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const tail = before ? before.then(() => finished) : finished;
    this.#tails.set(id, tail);
    const release = () => {
      done();
      if (this.#tails.get(id) === tail) this.#tails.delete(id);
    };
    return before ? before.then(() => task(release)) : task(release);
  }
}
