import type { Redis } from 'ioredis';
import type { RedisConfig, StoreHealth, StoreMonitor } from './connect.js';
import { storeDown } from './connect.js';
import type { StoreKeys } from './keys.js';
import { Liveness } from './liveness.js';
import { LEASE_SCRIPT, RELEASE_SCRIPT, SHARE_SCRIPT } from './scripts.js';
import type { Scripts } from './scripts.js';

/**
 * The shared store's connection and the commands sent on it: each timed for the monitor, its
 * failure an E_STORE_DOWN, its answer or timeout told to the store's liveness (liveness.ts),
 * which the connection's own events tell too.
 */
export class StoreCommands {
  readonly redis: Redis & Scripts;
  readonly liveness: Liveness;

  constructor(
    redis: Redis,
    private readonly config: RedisConfig,
    private readonly keys: StoreKeys,
    private readonly monitor: StoreMonitor,
    /** Called each time the connection is ready (the first one included). */
    ready: () => void,
  ) {
    redis.defineCommand('tgLease', { numberOfKeys: 4, lua: LEASE_SCRIPT });
    redis.defineCommand('tgRelease', { numberOfKeys: 5, lua: RELEASE_SCRIPT });
    redis.defineCommand('tgShare', { numberOfKeys: 1, lua: SHARE_SCRIPT });
    this.redis = redis as Redis & Scripts;
    const live = (this.liveness = new Liveness(monitor, config.timeout));
    redis.on('ready', () => {
      live.connection(null);
      ready();
    });
    redis.on('error', (err: Error) => live.connection(err.message));
    redis.on('end', () => live.connection('connection closed'));
    // Down from the moment the connection drops, not from the first failed reconnect (~50 ms
    // later): an operator action accepted meanwhile would reach no other replica.
    redis.on('close', () => live.connection('connection lost'));
  }

  /**
   * Connects (a store down now is connected to later, on its own), and probes it from then
   * with a read of the epoch: a PING that also notices the keys gone under this connection.
   */
  connect(epochRead: (epoch: string) => void): Promise<void> {
    this.liveness.probe(() =>
      this.run('probe', () => this.redis.get(this.keys.epoch)).then((epoch) =>
        epochRead(epoch ?? ''),
      ),
    );
    return this.redis.connect();
  }

  health(): StoreHealth {
    return this.liveness.health();
  }

  /** One store command, timed; a failure is E_STORE_DOWN (or what it already was). */
  async run<T>(op: string, command: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await command();
      this.monitor.storeOp(op, (performance.now() - started) / 1000);
      this.liveness.answered();
      return result;
    } catch (err) {
      this.monitor.storeError(op);
      this.liveness.failed(err);
      // While disconnected, why the connection is down says more than the refused command.
      const down = this.liveness.disconnected;
      throw storeDown(this.config, down === null ? err : new Error(down));
    }
  }

  publish(message: string): Promise<unknown> {
    return this.run('publish', () => this.redis.publish(this.keys.bus, message));
  }

  /** Every session the store knows, first seen first. */
  knownSessions(): Promise<string[]> {
    return this.run('load', () => this.redis.zrange(this.keys.sessions, 0, -1));
  }

  /** The session's recent records as written, oldest first. */
  async recentOf(id: string): Promise<unknown[]> {
    const lines = await this.run('load', () => this.redis.lrange(this.keys.recent(id), 0, -1));
    return lines.map((line) => JSON.parse(line) as unknown);
  }

  /** Operators' approvals and deny patterns, by id: their journal records. */
  async rules(): Promise<Record<string, string>> {
    return this.run('load', () => this.redis.hgetall(this.keys.rules));
  }

  saveRule(id: string, record: unknown): Promise<unknown> {
    const line = JSON.stringify(record);
    return this.run('write', () =>
      this.redis.multi().hset(this.keys.rules, id, line).incr(this.keys.rulesVersion).exec(),
    );
  }

  dropRule(id: string): Promise<unknown> {
    return this.run('write', () =>
      this.redis.multi().hdel(this.keys.rules, id).incr(this.keys.rulesVersion).exec(),
    );
  }

  close(): void {
    this.liveness.stop();
    this.redis.disconnect();
  }
}
