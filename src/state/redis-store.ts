import type { Redis } from 'ioredis';
import { TrajgateError } from '../errors.js';
import type { Lease, SessionChange, SharedState } from '../guard/store.js';
import { applyChange, applyResume, fresh, MemoryStore } from '../guard/store.js';
import { decodeSession, encodeSession } from '../guard/state-codec.js';
import type { RedisConfig, StoreHealth, StoreMonitor } from './connect.js';
import { redisWhere, storeDown } from './connect.js';
import { StoreKeys } from './keys.js';
import { Liveness } from './liveness.js';
import type { LeaseCommands, Shared } from './leases.js';
import { LEASE_MS, Leases } from './leases.js';
import { LEASE_SCRIPT, RELEASE_SCRIPT, SHARE_SCRIPT } from './scripts.js';
import { Outbox } from './outbox.js';
import type { Scripts } from './scripts.js';

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
  readonly #redis: Redis & Scripts;
  readonly #config: RedisConfig;
  readonly #keys: StoreKeys;
  readonly #monitor: StoreMonitor;
  readonly #liveness: Liveness;
  readonly #leases: Leases;
  readonly #outbox: Outbox;
  readonly #keep: number;
  readonly #versions = new Map<string, number>();
  #remote = false;
  #closed = false;
  /** The store's epoch as last seen (keys.epoch), and why decisions stop if it went. */
  #epoch: string | null = null;
  #emptied: string | null = null;
  /** The Redis server's run_id as last seen: another one was restarted (maybe from a dump). */
  #runId: string | null = null;
  /** Whether this gateway decided before (its journal was not empty at start). */
  #history = false;
  readonly #onReady: (() => void)[] = [];
  #rulesVersion = '';
  readonly #onRefreshed: ((id: string) => void)[] = [];
  #reloadRules: () => Promise<void> = () => Promise.resolve();

  constructor(
    redis: Redis,
    config: RedisConfig,
    replica: string,
    monitor: StoreMonitor,
    /** How many recent events each session keeps (policy.recentEvents). */
    keep = 20,
  ) {
    super();
    this.#keep = keep;
    redis.defineCommand('tgLease', { numberOfKeys: 4, lua: LEASE_SCRIPT });
    redis.defineCommand('tgRelease', { numberOfKeys: 5, lua: RELEASE_SCRIPT });
    redis.defineCommand('tgShare', { numberOfKeys: 1, lua: SHARE_SCRIPT });
    this.#redis = redis as Redis & Scripts;
    this.#config = config;
    this.#keys = new StoreKeys(config.prefix);
    this.replica = replica;
    this.#monitor = monitor;
    this.#liveness = new Liveness(monitor, config.timeout);
    this.#leases = new Leases(this.#leaseCommands(), replica);
    this.#outbox = new Outbox((recent, records) =>
      this.#run('publish', () =>
        this.#redis.tgShare(this.#keys.bus, this.#keep, this.message(records), ...recent),
      ),
    );
    const live = this.#liveness;
    redis.on('ready', () => {
      live.connection(null);
      for (const listener of this.#onReady) listener();
    });
    redis.on('error', (err: Error) => live.connection(err.message));
    redis.on('end', () => live.connection('connection closed'));
    // Down from the moment the connection drops, not from the first failed reconnect (~50 ms
    // later): an operator action accepted meanwhile would reach no other replica.
    redis.on('close', () => live.connection('connection lost'));
  }

  /** Connects (a store down now is connected to later, on its own), and probes it from then. */
  connect(): Promise<void> {
    // A read of the epoch: a PING that also notices the keys gone under this connection.
    this.#liveness.probe(() =>
      this.#run('probe', () => this.#redis.get(this.#keys.epoch)).then((epoch) =>
        this.#epochAt(epoch ?? ''),
      ),
    );
    return this.#redis.connect();
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
    this.#history = history;
  }

  /**
   * Reads the store's epoch. The first gateway of a fleet (with no history) names it; a store
   * without one that this gateway saw before, or that it decided against before, came back
   * empty: decisions then fail closed until \`trajgate state rebuild\` fills it and names a new
   * epoch, which is accepted here. Returns whether the epoch changed to a rebuilt one.
   */
  async checkEpoch(): Promise<boolean> {
    const key = this.#keys.epoch;
    let current = await this.#run('epoch', () => this.#redis.get(key));
    if (current === null && this.#epoch === null && !this.#history) {
      const named = `${this.replica}:${Date.now()}`;
      await this.#run('epoch', () => this.#redis.set(key, named, 'NX'));
      current = await this.#run('epoch', () => this.#redis.get(key));
    }
    if (current === null) {
      this.#lost();
      return false;
    }
    const rebuilt = this.#emptied !== null || (this.#epoch !== null && current !== this.#epoch);
    // A rebuilt store numbers its states afresh.
    if (rebuilt) this.#versions.clear();
    this.#epoch = current;
    this.#setEmptied(null);
    return rebuilt;
  }

  /**
   * The epoch read under a lease: gone (FLUSHALL, keys evicted) is a store that came back empty,
   * another one a store rebuilt under this connection (its states read again: onReady). Before
   * this gateway read one (checkEpoch at start), nothing to compare with.
   */
  #epochAt(epoch: string): void {
    if (this.#epoch === null || epoch === this.#epoch) return;
    if (epoch === '') {
      this.#lost();
      throw new TrajgateError('E_STORE_DOWN', this.#emptied as string);
    }
    this.#versions.clear();
    this.#epoch = epoch;
    queueMicrotask(() => this.#onReady.forEach((listener) => listener()));
  }

  #lost(): void {
    this.#setEmptied(
      `the state store ${redisWhere(this.#config)} came back empty (its epoch is gone): decisions are refused until \`trajgate state rebuild --from JOURNAL…\` refills it from the gateways' journals`,
    );
  }

  /**
   * Whether the Redis server was restarted (its run_id changed) since this gateway last read
   * it. It may have come back from an older dump, its states at lower versions than the mirror's:
   * the versions are forgotten so that the next reads take what the store holds.
   */
  async restarted(): Promise<boolean> {
    // A Redis whose INFO is disabled (renamed away) is taken as not restarted.
    const info = await this.#run('epoch', () => this.#redis.info('server')).catch(() => '');
    const runId = /^run_id:(\w+)/m.exec(info)?.[1];
    if (runId === undefined) return false;
    const restarted = this.#runId !== null && runId !== this.#runId;
    this.#runId = runId;
    if (restarted) {
      this.#versions.clear();
      this.#rulesVersion = '';
    }
    return restarted;
  }

  onRefreshed(listener: (id: string) => void): void {
    this.#onRefreshed.push(listener);
  }

  get keys(): StoreKeys {
    return this.#keys;
  }

  health(): StoreHealth {
    return this.#liveness.health();
  }

  lease(id: string): Promise<Lease> {
    // Queued now, not a turn later: a message shared after this write must queue behind it.
    if (this.#emptied === null) return this.#leases.lease(id);
    return this.#usable().then(() => this.#leases.lease(id));
  }

  /** Throws while the store came back empty (checking whether a rebuild refilled it). */
  async #usable(): Promise<void> {
    if (this.#emptied !== null && (await this.checkEpoch())) {
      for (const listener of this.#onReady) listener();
    }
    if (this.#emptied !== null) throw new TrajgateError('E_STORE_DOWN', this.#emptied);
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
    const [text, rules, epoch] = await this.#run('refresh', () =>
      this.#redis.mget(k.session(id), k.rulesVersion, k.epoch),
    );
    if (this.#leases.busy(id)) return false;
    // Keys gone under a live connection: no state read is to be taken for the truth (fresh).
    this.#epochAt(epoch ?? '');
    this.#adoptText(id, text ?? '');
    for (const listener of this.#onRefreshed) listener(id);
    await this.#rulesAt(rules ?? '');
    return true;
  }

  async peek(id: string): Promise<boolean> {
    await this.#usable();
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
      await this.#run('publish', () => this.#redis.publish(this.#keys.bus, this.message([record])));
    });
  }

  /** Records as one bus message: this gateway's name, then one record per line. */
  message(records: readonly string[]): string {
    return records.length === 0 ? '' : `${this.replica}\n${records.join('\n')}`;
  }

  /** Every session the store knows, first seen first. */
  knownSessions(): Promise<string[]> {
    return this.#run('load', () => this.#redis.zrange(this.#keys.sessions, 0, -1));
  }

  /** The session's recent records as written, oldest first. */
  async recentOf(id: string): Promise<unknown[]> {
    const lines = await this.#run('load', () => this.#redis.lrange(this.#keys.recent(id), 0, -1));
    return lines.map((line) => JSON.parse(line) as unknown);
  }

  /** Operators' approvals and deny patterns, by id: their journal records. */
  async rules(): Promise<Record<string, string>> {
    return this.#run('load', () => this.#redis.hgetall(this.#keys.rules));
  }

  saveRule(id: string, record: unknown): Promise<unknown> {
    const k = this.#keys;
    const line = JSON.stringify(record);
    return this.#run('write', () =>
      this.#redis.multi().hset(k.rules, id, line).incr(k.rulesVersion).exec(),
    );
  }

  dropRule(id: string): Promise<unknown> {
    const k = this.#keys;
    return this.#run('write', () =>
      this.#redis.multi().hdel(k.rules, id).incr(k.rulesVersion).exec(),
    );
  }

  /**
   * Called to read the operators' rules again (replication.ts) when a decision finds their
   * version moved: an approval made on another gateway counts before the next decision here.
   */
  onRules(reload: () => Promise<void>): void {
    this.#reloadRules = reload;
  }

  async #rulesAt(version: string): Promise<void> {
    if (version === this.#rulesVersion) return;
    await this.#reloadRules();
    this.#rulesVersion = version;
  }

  publish(message: string): Promise<unknown> {
    return this.#run('publish', () => this.#redis.publish(this.#keys.bus, message));
  }

  close(): void {
    this.#closed = true;
    this.#liveness.stop();
    this.#redis.disconnect();
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

  #leaseCommands(): LeaseCommands {
    const k = this.#keys;
    const none: Shared = { recent: [], records: [] };
    const release = (id: string, token: string, state: string, version: number, shared: Shared) =>
      this.#run('claim', () =>
        this.#redis.tgRelease(
          k.lock(id),
          k.session(id),
          k.sessions,
          k.recent(id),
          k.bus,
          token,
          state,
          version,
          Date.now(),
          id,
          this.#keep,
          shared.recent.length,
          ...shared.recent,
          this.message(shared.records),
        ),
      );
    return {
      take: (id, token) =>
        this.#run('lease', () =>
          this.#redis.tgLease(k.lock(id), k.session(id), k.rulesVersion, k.epoch, token, LEASE_MS),
        ),
      adopt: async (id, text, rules, epoch) => {
        this.#epochAt(epoch);
        this.#adoptText(id, text, true);
        await this.#rulesAt(rules);
      },
      write: async (id, token, dirty, shared) => {
        const version = this.#versions.get(id) ?? 0;
        const state = dirty ? JSON.stringify(encodeSession(this.live(id))) : '';
        const answer = await release(id, token, state, version, shared);
        if (answer !== 1) {
          this.#versions.delete(id);
          throw new TrajgateError(
            'E_STORE_DOWN',
            `session ${JSON.stringify(id)}: the lease ran out before the decision was stored (${answer === -1 ? 'lease lost' : 'version moved'})`,
          );
        }
        if (dirty) this.#versions.set(id, version + 1);
      },
      unlock: (id, token) => release(id, token, '', 0, none),
      stuck: (id) =>
        new TrajgateError(
          'E_STORE_DOWN',
          `session ${JSON.stringify(id)} stayed leased by another gateway for over ${LEASE_MS} ms (${redisWhere(this.#config)})`,
        ),
    };
  }

  /** `leased`: read under the session's lease, so what the store holds, whatever its version. */
  #adoptText(id: string, text: string, leased = false): void {
    if (text === '') {
      this.#versions.set(id, 0);
      this.adopt(id, fresh());
      return;
    }
    const where = `${redisWhere(this.#config)} key ${this.#keys.session(id)}`;
    let parsed: { v?: unknown; state?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new TrajgateError('E_STORE_CORRUPT', `${where}: not JSON`);
    }
    if (!Number.isSafeInteger(parsed.v)) {
      throw new TrajgateError('E_STORE_CORRUPT', `${where}: "v" is not a version number`);
    }
    const state = decodeSession(parsed.state, where);
    // A read without the lease that a write of this gateway overtook: the mirror is newer.
    if (!leased && (parsed.v as number) < (this.#versions.get(id) ?? 0)) return;
    this.adopt(id, state);
    this.#versions.set(id, parsed.v as number);
  }

  /** One store command, timed; a failure is E_STORE_DOWN (or what it already was). */
  async #run<T>(op: string, command: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await command();
      this.#monitor.storeOp(op, (performance.now() - started) / 1000);
      this.#liveness.answered();
      return result;
    } catch (err) {
      this.#monitor.storeError(op);
      this.#liveness.failed(err);
      // While disconnected, why the connection is down says more than the refused command.
      const down = this.#liveness.disconnected;
      throw storeDown(this.#config, down === null ? err : new Error(down));
    }
  }

  #setEmptied(why: string | null): void {
    this.#emptied = why;
    this.#liveness.emptied(why);
  }
}
