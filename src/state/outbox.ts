/**
 * Events of decisions that changed nothing, gathered over one turn of the event loop and sent
 * in one round trip (SHARE_SCRIPT): under load, one command for many events rather than one
 * each. Each caller is told once its event went (or did not).
 */
export class Outbox {
  /** Pairs of a recent-events key and an event line, and the records to publish. */
  #recent: string[] = [];
  #records: string[] = [];
  #waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  #scheduled = false;

  constructor(private readonly send: (recent: string[], records: string[]) => Promise<unknown>) {}

  add(recentKey: string, line: string, record: string): Promise<void> {
    this.#recent.push(recentKey, line);
    this.#records.push(record);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  #flush(): void {
    const recent = this.#recent;
    const records = this.#records;
    const waiting = this.#waiting;
    this.#recent = [];
    this.#records = [];
    this.#waiting = [];
    this.#scheduled = false;
    this.send(recent, records).then(
      () => waiting.forEach((w) => w.resolve()),
      (err: unknown) => waiting.forEach((w) => w.reject(err)),
    );
  }
}
