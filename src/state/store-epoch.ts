import { TrajgateError } from '../errors.js';
import type { RedisConfig } from './connect.js';
import { redisWhere } from './connect.js';
import type { StoreKeys } from './keys.js';
import type { StoreCommands } from './store-commands.js';

/** What the rest of the store does when its contents turn out not to be those it read. */
export interface EpochHooks {
  /** States are numbered afresh (`rules`: and the operators' rules are to be read again). */
  forget(rules: boolean): void;
  /** What the store holds is to be read again (RedisStore.onReady's listeners). */
  ready(): void;
}

/**
 * Whether the store still holds the contents this gateway knows: its epoch (keys.epoch) names
 * them, and the Redis server's run_id tells a restart (maybe from an older dump). A store that
 * lost its epoch came back empty: decisions stop until a rebuild names a new one.
 */
export class StoreEpoch {
  /** The store's epoch as last seen, and why decisions stop if it went. */
  #epoch: string | null = null;
  #emptied: string | null = null;
  /** The Redis server's run_id as last seen: another one was restarted (maybe from a dump). */
  #runId: string | null = null;
  /** Whether this gateway decided before (its journal was not empty at start). */
  #history = false;

  constructor(
    private readonly commands: StoreCommands,
    private readonly keys: StoreKeys,
    private readonly config: RedisConfig,
    private readonly replica: string,
    private readonly hooks: EpochHooks,
  ) {}

  /** Why decisions stop (the store came back empty), or null. */
  get emptied(): string | null {
    return this.#emptied;
  }

  /** This gateway decided before: an empty store is then one that lost its contents. */
  hadHistory(history: boolean): void {
    this.#history = history;
  }

  /**
   * Reads the store's epoch. The first gateway of a fleet (with no history) names it; a store
   * without one that this gateway saw before, or that it decided against before, came back
   * empty: decisions then fail closed until \`trajgate state rebuild\` fills it and names a new
   * epoch, which is accepted here. Returns whether the epoch changed to a rebuilt one.
   */
  async check(): Promise<boolean> {
    const key = this.keys.epoch;
    let current = await this.commands.run('epoch', () => this.commands.redis.get(key));
    if (current === null && this.#epoch === null && !this.#history) {
      const named = `${this.replica}:${Date.now()}`;
      await this.commands.run('epoch', () => this.commands.redis.set(key, named, 'NX'));
      current = await this.commands.run('epoch', () => this.commands.redis.get(key));
    }
    if (current === null) {
      this.#lost();
      return false;
    }
    const rebuilt = this.#emptied !== null || (this.#epoch !== null && current !== this.#epoch);
    // A rebuilt store numbers its states afresh.
    if (rebuilt) this.hooks.forget(false);
    this.#epoch = current;
    this.#setEmptied(null);
    return rebuilt;
  }

  /**
   * The epoch read under a lease: gone (FLUSHALL, keys evicted) is a store that came back empty,
   * another one a store rebuilt under this connection (its states read again: ready). Before
   * this gateway read one (check at start), nothing to compare with.
   */
  at(epoch: string): void {
    if (this.#epoch === null || epoch === this.#epoch) return;
    if (epoch === '') {
      this.#lost();
      throw new TrajgateError('E_STORE_DOWN', this.#emptied as string);
    }
    this.hooks.forget(false);
    this.#epoch = epoch;
    queueMicrotask(() => this.hooks.ready());
  }

  /** Throws while the store came back empty (checking whether a rebuild refilled it). */
  async usable(): Promise<void> {
    if (this.#emptied !== null && (await this.check())) this.hooks.ready();
    if (this.#emptied !== null) throw new TrajgateError('E_STORE_DOWN', this.#emptied);
  }

  /**
   * Whether the Redis server was restarted (its run_id changed) since this gateway last read
   * it. It may have come back from an older dump, its states at lower versions than the mirror's:
   * the versions are forgotten so that the next reads take what the store holds.
   */
  async restarted(): Promise<boolean> {
    // A Redis whose INFO is disabled (renamed away) is taken as not restarted.
    const info = await this.commands
      .run('epoch', () => this.commands.redis.info('server'))
      .catch(() => '');
    const runId = /^run_id:(\w+)/m.exec(info)?.[1];
    if (runId === undefined) return false;
    const restarted = this.#runId !== null && runId !== this.#runId;
    this.#runId = runId;
    if (restarted) this.hooks.forget(true);
    return restarted;
  }

  #lost(): void {
    this.#setEmptied(
      `the state store ${redisWhere(this.config)} came back empty (its epoch is gone): decisions are refused until \`trajgate state rebuild --from JOURNAL…\` refills it from the gateways' journals`,
    );
  }

  #setEmptied(why: string | null): void {
    this.#emptied = why;
    this.commands.liveness.emptied(why);
  }
}
