import type { Redis } from 'ioredis';
import type { Lease, SessionChange, SharedState } from '../guard/store.js';
import { applyChange, applyResume, fresh, MemoryStore } from '../guard/store.js';
import type { RedisConfig, StoreHealth, StoreMonitor } from './connect.js';
import { StoreKeys } from './keys.js';
import { Leases } from './leases.js';
import { Outbox } from './outbox.js';
import type { Mirror } from './session-states.js';
import { SessionStates } from './session-states.js';
import { StoreCommands } from './store-commands.js';
import { StoreEpoch } from './store-epoch.js';

/**
 * The trajectory shared by every gateway naming the same Redis and prefix. This process keeps a
 * mirror (the MemoryStore it extends) that views and the guard read; a decision takes the
 * session's lease, which reads the session's state into the mirror, and its release writes what
 * was committed back with a compare-and-set on the state's version, so the decisions of one
 * session are made one at a time across gateways. Changes made outside a decision (outcomes,
 * resumes) take the lease the same way, in the background, until Redis has them.
 */
export class RedisStore<R> extends MemoryStore<R> implements SharedState {
  readonly shared: SharedState = this;
  readonly replica: string;
  /** The connection, and the plain reads and writes replication makes (rules, loads). */
  readonly commands: StoreCommands;
  readonly #keys: StoreKeys;
  readonly #leases: Leases;
  readonly #outbox: Outbox;
  readonly #epoch: StoreEpoch;
  readonly #states: SessionStates;
  #remote = false;
  #closed = false;
  readonly #onReady: (() => void)[] = [];
  readonly #onRefreshed: ((id: string) => void)[] = [];

  constructor(
    redis: Redis,
    config: RedisConfig,
    replica: string,
    monitor: StoreMonitor,
    /** How many recent events each session keeps (policy.recentEvents). */
    keep = 20,
  ) {
    super();
    const keys = (this.#keys = new StoreKeys(config.prefix));
    this.replica = replica;
    const ready = () => this.#onReady.forEach((listener) => listener());
    const commands = (this.commands = new StoreCommands(redis, config, keys, monitor, ready));
    this.#epoch = new StoreEpoch(commands, keys, config, replica, {
      forget: (rules) => this.#states.forget(rules),
      ready,
    });
    const mirror: Mirror = {
      live: (id) => this.live(id),
      adopt: (id, state) => this.adopt(id, state),
    };
    this.#states = new SessionStates(commands, keys, config, keep, this.#epoch, mirror, (records) =>
      this.message(records),
    );
    this.#leases = new Leases(this.#states.leaseCommands(), replica);
    this.#outbox = new Outbox((recent, records) =>
      commands.run('publish', () =>
        commands.redis.tgShare(keys.bus, keep, this.message(records), ...recent),
      ),
    );
  }

  /** Connects (a store down now is connected to later, on its own), and probes it from then. */
  connect(): Promise<void> {
    return this.commands.connect((epoch) => this.#epoch.at(epoch));
  }

  /**
   * Called each time the store answers again (the first connection included) and when it was
   * rebuilt after coming back empty: what it holds is to be read again.
   */
  onReady(listener: () => void): void {
    this.#onReady.push(listener);
  }

  /** This gateway decided before: an empty store is then one that lost its contents. */
  hadHistory(history: boolean): void {
    this.#epoch.hadHistory(history);
  }

  /** Reads the store's epoch (StoreEpoch.check): whether it changed to a rebuilt one. */
  checkEpoch(): Promise<boolean> {
    return this.#epoch.check();
  }

  /** Whether the Redis server was restarted since last read (StoreEpoch.restarted). */
  restarted(): Promise<boolean> {
    return this.#epoch.restarted();
  }

  onRefreshed(listener: (id: string) => void): void {
    this.#onRefreshed.push(listener);
  }

  get keys(): StoreKeys {
    return this.#keys;
  }

  health(): StoreHealth {
    return this.commands.health();
  }

  lease(id: string): Promise<Lease> {
    // Queued now, not a turn later: a message shared after this write must queue behind it.
    if (this.#epoch.emptied === null) return this.#leases.lease(id);
    return this.#epoch.usable().then(() => this.#leases.lease(id));
  }

  /** Runs `task` after what this gateway queued or decided for the session is written. */
  inOrder(id: string, task: () => Promise<void>): Promise<void> {
    return this.#leases.after(id, task);
  }

  override commit(id: string, change: SessionChange): void {
    super.commit(id, change);
    this.#changed(id, (state) => applyChange(state, change));
  }

  override resume(id: string, reset: boolean, keepMarks = false): void {
    super.resume(id, reset, keepMarks);
    this.#changed(id, (state) => applyResume(state, reset, keepMarks));
  }

  /**
   * Runs `apply` with changes only the mirror learns: records from another gateway, or this
   * gateway's journal read back at start (the store has what they changed already).
   */
  asRemote<T>(apply: () => T): T {
    this.#remote = true;
    try {
      return apply();
    } finally {
      this.#remote = false;
    }
  }

  /**
   * Reads the session's state into the mirror without a lease (another gateway changed it);
   * false, reading nothing in, while this gateway decides for it (its lease reads it anyway).
   */
  async refresh(id: string): Promise<boolean> {
    if (this.#leases.busy(id)) return false;
    const k = this.#keys;
    const [text, rules, epoch] = await this.commands.run('refresh', () =>
      this.commands.redis.mget(k.session(id), k.rulesVersion, k.epoch),
    );
    if (this.#leases.busy(id)) return false;
    // Keys gone under a live connection: no state read is to be taken for the truth (fresh).
    this.#epoch.at(epoch ?? '');
    this.#states.adopt(id, text ?? '');
    for (const listener of this.#onRefreshed) listener(id);
    await this.#states.rulesAt(rules ?? '');
    return true;
  }

  async peek(id: string): Promise<boolean> {
    await this.#epoch.usable();
    return this.refresh(id);
  }

  /**
   * Shares a record (JSON) this gateway journaled: with the write of the session's lease when
   * one is held (one round trip for both); an event of a decision that changed nothing with the
   * others of this turn of the event loop (one round trip for all); anything else at once, in
   * order after what was queued for the session before it. `line`: an event record to keep
   * among the session's recent ones.
   */
  share(id: string, line: string | null, record: string): Promise<void> {
    const held = this.#leases.holding(id);
    if (held !== undefined) {
      if (line !== null) held.shared.recent.push(line);
      held.shared.records.push(record);
      return Promise.resolve();
    }
    if (line !== null) return this.#outbox.add(this.#keys.recent(id), line, record);
    return this.inOrder(id, async () => {
      await this.commands.publish(this.message([record]));
    });
  }

  /** Records as one bus message: this gateway's name, then one record per line. */
  message(records: readonly string[]): string {
    return records.length === 0 ? '' : `${this.replica}\n${records.join('\n')}`;
  }

  /** Called to read the operators' rules again when a decision finds their version moved. */
  onRules(reload: () => Promise<void>): void {
    this.#states.onRules(reload);
  }

  close(): void {
    this.#closed = true;
    this.commands.close();
  }

  /** A change outside a decision: under a lease it rides with the release, else it takes one. */
  #changed(id: string, apply: (state: ReturnType<typeof fresh>) => void): void {
    if (this.#remote) return;
    const held = this.#leases.holding(id);
    if (held) held.dirty = true;
    else void this.#background(id, apply);
  }

  async #background(id: string, apply: (state: ReturnType<typeof fresh>) => void): Promise<void> {
    for (let wait = 50; !this.#closed; wait = Math.min(wait * 2, 2_000)) {
      try {
        const lease = await this.lease(id);
        apply(this.live(id));
        (this.#leases.holding(id) as { dirty: boolean }).dirty = true;
        await lease.release();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}
