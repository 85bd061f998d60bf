import type { Logger } from 'pino';

interface Opened {
  readonly name: string;
  readonly close: () => void | Promise<void>;
}

/**
 * What a gateway opened, in the order it opened it; each part's close is pushed as the part
 * opens. Closing runs them last first (a listener before the pipeline it feeds, the journal
 * before the store it reads back into), once: a start that fails midway closes what it
 * opened, and stop closes the same list. A close that throws is logged and the rest still run,
 * so one broken part never keeps a socket (and so the process) alive.
 */
export class Teardown {
  readonly #opened: Opened[] = [];
  #closing: Promise<void> | null = null;

  constructor(private readonly log: Pick<Logger, 'error'>) {}

  /** Adds `close` for the part just opened (`name` says which in a log line). */
  push(name: string, close: () => void | Promise<void>): void {
    if (this.#closing !== null) throw new Error(`teardown: ${name} opened while closing`);
    this.#opened.push({ name, close });
  }

  /** Closes everything pushed, last first; a second call waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#unwind();
    return this.#closing;
  }

  async #unwind(): Promise<void> {
    for (let part = this.#opened.pop(); part !== undefined; part = this.#opened.pop()) {
      try {
        await part.close();
      } catch (err) {
        this.log.error({ err }, `closing ${part.name} failed`);
      }
    }
  }
}
