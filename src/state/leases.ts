import { TrajgateError } from '../errors.js';
import type { Lease } from '../guard/store.js';
import { LocalOrder } from './local-order.js';

/** How long a lease lives if its gateway dies holding it (kill -9): others wait this long. */
export const LEASE_MS = 5_000;

/** The most decisions of one session that share one lease before it is given back. */
const BATCH = 64;

/** The store commands a lease is made of (redis-store.ts). */
export interface LeaseCommands {
  /**
   * Takes the lock and reads the state, the rules' version and the store's epoch: [1, state
   * text, version, epoch] or [0, ms the lock has left].
   */
  take(id: string, token: string): Promise<[number, string, string?, string?]>;
  /**
   * Installs what was read under the lock in the mirror; throws E_STORE_CORRUPT, or
   * E_STORE_DOWN when the store lost its epoch.
   */
  adopt(id: string, text: string, rules: string, epoch: string): Promise<void>;
  /**
   * Writes the mirror's state if `dirty` (a compare-and-set on its version), then what the
   * decisions made under the lease share (`shared`), and unlocks.
   */
  write(id: string, token: string, dirty: boolean, shared: Shared): Promise<void>;
  /** Unlocks without writing. */
  unlock(id: string, token: string): Promise<unknown>;
  /** Why the lock could not be had (a gateway died holding it, or Redis is slow). */
  stuck(id: string): TrajgateError;
}

/** What decisions share with the other gateways once written: event lines and records. */
export interface Shared {
  readonly recent: string[];
  /** Journal records (JSON), published together in one message. */
  readonly records: string[];
}

/** One holding of a session's lock by this gateway: the decisions made under it. */
interface Held {
  readonly token: string;
  dirty: boolean;
  size: number;
  /** The decisions made under it, told once their changes are written (or not). */
  readonly waiting: { resolve: () => void; reject: (err: unknown) => void }[];
  /** What must wait for the write (messages announcing it). */
  readonly after: (() => Promise<void>)[];
  readonly shared: Shared;
}

/**
 * Session leases. Within this gateway, decisions of one session queue (LocalOrder); one that
 * finds the next one queued hands the lock on instead of writing and unlocking, so a burst of
 * one agent's requests costs one lock and one write, not one per request (a group commit: each
 * decision takes effect once the write that holds it succeeded). At most BATCH share a lock.
 */
export class Leases {
  readonly #commands: LeaseCommands;
  readonly #replica: string;
  readonly #order = new LocalOrder();
  readonly #held = new Map<string, Held>();
  readonly #queued = new Map<string, number>();
  /** Sessions whose lock is being taken (neither queued nor held yet). */
  readonly #taking = new Set<string>();
  #tokens = 0;

  constructor(commands: LeaseCommands, replica: string) {
    this.#commands = commands;
    this.#replica = replica;
  }

  /** The holding a change of the session rides with, if a decision holds its lock now. */
  holding(id: string): { dirty: boolean; readonly shared: Shared } | undefined {
    return this.#held.get(id);
  }

  /** Whether this gateway holds or waits for the session's lease now. */
  busy(id: string): boolean {
    return this.#held.has(id) || this.#queued.has(id) || this.#taking.has(id);
  }

  lease(id: string): Promise<Lease> {
    this.#queued.set(id, (this.#queued.get(id) ?? 0) + 1);
    return this.#order.run(id, async (done) => {
      const left = (this.#queued.get(id) ?? 1) - 1;
      if (left === 0) this.#queued.delete(id);
      else this.#queued.set(id, left);
      let held = this.#held.get(id);
      if (held === undefined) {
        this.#taking.add(id);
        try {
          held = await this.#take(id);
        } catch (err) {
          done();
          throw err;
        } finally {
          this.#taking.delete(id);
        }
        this.#held.set(id, held);
      }
      const holding = held;
      return { release: () => this.#release(id, holding, done) };
    });
  }

  /** Runs `task` after what this gateway queued or decided for the session is written. */
  after(id: string, task: () => Promise<void>): Promise<void> {
    return this.#order.run(id, async (done) => {
      const held = this.#held.get(id);
      if (held !== undefined) {
        done();
        return new Promise<void>((resolve, reject) =>
          held.after.push(() => task().then(resolve, reject)),
        );
      }
      try {
        await task();
      } finally {
        done();
      }
    });
  }

  async #take(id: string): Promise<Held> {
    const token = `${this.#replica}:${++this.#tokens}`;
    const deadline = Date.now() + LEASE_MS * 1.2;
    for (let wait = 1; ; wait = Math.min(wait * 2, 16)) {
      const [taken, value, rules = '', epoch = ''] = await this.#commands.take(id, token);
      if (taken === 1) {
        try {
          await this.#commands.adopt(id, value, rules, epoch);
        } catch (err) {
          // Refused, so given back at once: the next request reads the record again.
          await this.#commands.unlock(id, token).catch(() => undefined);
          throw err;
        }
        return {
          token,
          dirty: false,
          size: 0,
          waiting: [],
          after: [],
          shared: { recent: [], records: [] },
        };
      }
      if (Date.now() > deadline) throw this.#commands.stuck(id);
      const left = Number(value) > 0 ? Number(value) : wait;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left)));
    }
  }

  #release(id: string, held: Held, done: () => void): Promise<void> {
    held.size++;
    const written = new Promise<void>((resolve, reject) => held.waiting.push({ resolve, reject }));
    if (this.#queued.has(id) && held.size < BATCH) {
      done();
      return written;
    }
    this.#held.delete(id);
    this.#commands
      .write(id, held.token, held.dirty, held.shared)
      .then(
        () => held.waiting.forEach((w) => w.resolve()),
        (err: unknown) => held.waiting.forEach((w) => w.reject(err)),
      )
      .finally(() => {
        done();
        for (const task of held.after) void task();
      });
    return written;
  }
}
