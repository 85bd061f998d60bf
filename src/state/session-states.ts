import { TrajgateError } from '../errors.js';
import type { Live } from '../guard/store.js';
import { fresh } from '../guard/store.js';
import { decodeSession, encodeSession } from '../guard/state-codec.js';
import type { RedisConfig } from './connect.js';
import { redisWhere } from './connect.js';
import type { StoreKeys } from './keys.js';
import type { LeaseCommands, Shared } from './leases.js';
import { LEASE_MS } from './leases.js';
import type { StoreCommands } from './store-commands.js';
import type { StoreEpoch } from './store-epoch.js';

/** The process's copy of the states (RedisStore's MemoryStore). */
export interface Mirror {
  live(id: string): Live;
  adopt(id: string, state: Live): void;
}

/**
 * Session states between Redis and the mirror: read in (under a lease or not) with the
 * operators' rules' version and the store's epoch, and written back by a compare-and-set on
 * the version last read, so that a write made on a state another gateway moved is refused.
 */
export class SessionStates {
  readonly #versions = new Map<string, number>();
  #rulesVersion = '';
  #reloadRules: () => Promise<void> = () => Promise.resolve();

  constructor(
    private readonly commands: StoreCommands,
    private readonly keys: StoreKeys,
    private readonly config: RedisConfig,
    /** How many recent events each session keeps (policy.recentEvents). */
    private readonly keep: number,
    private readonly epoch: StoreEpoch,
    private readonly mirror: Mirror,
    /** Records as one bus message (RedisStore.message). */
    private readonly message: (records: readonly string[]) => string,
  ) {}

  /** The store numbers its states afresh (`rules`: and the rules are to be read again). */
  forget(rules: boolean): void {
    this.#versions.clear();
    if (rules) this.#rulesVersion = '';
  }

  /**
   * Called to read the operators' rules again (replication.ts) when a decision finds their
   * version moved: an approval made on another gateway counts before the next decision here.
   */
  onRules(reload: () => Promise<void>): void {
    this.#reloadRules = reload;
  }

  async rulesAt(version: string): Promise<void> {
    if (version === this.#rulesVersion) return;
    await this.#reloadRules();
    this.#rulesVersion = version;
  }

  /** `leased`: read under the session's lease, so what the store holds, whatever its version. */
  adopt(id: string, text: string, leased = false): void {
    if (text === '') {
      this.#versions.set(id, 0);
      this.mirror.adopt(id, fresh());
      return;
    }
    const where = `${redisWhere(this.config)} key ${this.keys.session(id)}`;
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
    this.mirror.adopt(id, state);
    this.#versions.set(id, parsed.v as number);
  }

  /** The lease's commands (leases.ts) as Redis scripts (scripts.ts). */
  leaseCommands(): LeaseCommands {
    const k = this.keys;
    const none: Shared = { recent: [], records: [] };
    const release = (id: string, token: string, state: string, version: number, shared: Shared) =>
      this.commands.run('claim', () =>
        this.commands.redis.tgRelease(
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
          this.keep,
          shared.recent.length,
          ...shared.recent,
          this.message(shared.records),
        ),
      );
    return {
      take: (id, token) =>
        this.commands.run('lease', () =>
          this.commands.redis.tgLease(
            k.lock(id),
            k.session(id),
            k.rulesVersion,
            k.epoch,
            token,
            LEASE_MS,
          ),
        ),
      adopt: async (id, text, rules, epoch) => {
        this.epoch.at(epoch);
        this.adopt(id, text, true);
        await this.rulesAt(rules);
      },
      write: async (id, token, dirty, shared) => {
        const version = this.#versions.get(id) ?? 0;
        const state = dirty ? JSON.stringify(encodeSession(this.mirror.live(id))) : '';
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
          `session ${JSON.stringify(id)} stayed leased by another gateway for over ${LEASE_MS} ms (${redisWhere(this.config)})`,
        ),
    };
  }
}
