import type { Logger } from 'pino';
import type { StateConfig } from '../config/state-schema.js';
import { MemoryStore } from '../guard/store.js';
import type { EventRecord, JournalRecord } from '../journal/records.js';
import type { StoreView } from '../wire.js';
import type { RedisConfig, StoreMonitor } from './connect.js';
import { connectRedis, redisWhere, replicaName } from './connect.js';
import { RedisStore } from './redis-store.js';
import type { ReplicationParts } from './replication.js';
import { Replication } from './replication.js';

/** The store the config names, and what a gateway does with it besides deciding. */
export interface OpenedStore {
  readonly store: MemoryStore<EventRecord>;
  /** This gateway's name among those sharing the store; null for the embedded one. */
  readonly replica: string | null;
  /** Whether the journal read back at start rebuilds the guard (only the embedded store's). */
  readonly rebuildsFromJournal: boolean;
  view(): StoreView;
  /** Starts sharing (nothing for the embedded store): records journaled from then on are told. */
  start(
    parts: Omit<ReplicationParts, 'store' | 'subscriber'> & { readonly history: boolean },
  ): Promise<void>;
  /** A record this gateway journaled; told to the others once started (read-back ones are not). */
  written(record: JournalRecord): void;
  /**
   * Around an operator's action (admin API): `before` reads the session's state from the store
   * (a pause decided elsewhere counts), `after` waits until the others have it. Both throw
   * E_STORE_DOWN.
   */
  action<T>(session: string | null, act: () => Promise<T>): Promise<T>;
  /** Runs `apply` with what it changes kept in this process (reading the journal back). */
  locally<T>(apply: () => T): T;
  close(): void;
}

const NOTHING = (): void => undefined;

const downLine = (redis: RedisConfig, error: string | null): string =>
  `state store ${redisWhere(redis)} does not answer (${error}): requests are refused until it does`;

export function openStore(
  config: StateConfig,
  log: Logger,
  monitor: StoreMonitor,
  /** policy.recentEvents: what the shared store keeps per session. */
  keep: number,
): OpenedStore {
  if (config.store === 'memory' || config.redis === undefined) {
    return {
      store: new MemoryStore<EventRecord>(),
      replica: null,
      rebuildsFromJournal: true,
      view: () => ({ kind: 'memory', up: true, error: null }),
      start: () => Promise.resolve(),
      written: NOTHING,
      locally: (apply) => apply(),
      action: (_session, act) => act(),
      close: NOTHING,
    };
  }
  const redis = config.redis;
  const replica = replicaName(redis);
  /** Once started, each change of the store's health is logged (before, start() says it). */
  const told: StoreMonitor = {
    storeOp: (op, seconds) => monitor.storeOp(op, seconds),
    storeError: (op) => monitor.storeError(op),
    storeUp(up) {
      monitor.storeUp(up);
      if (telling === null) return;
      if (up) log.info(`state store ${redisWhere(redis)} answers again: requests are decided`);
      else log.warn(downLine(redis, store.health().error));
    },
  };
  const store = new RedisStore<EventRecord>(
    connectRedis(redis, 'state'),
    redis,
    replica,
    told,
    keep,
  );
  const subscriber = connectRedis(redis, 'bus');
  let replication: Replication | null = null;
  /** Set once replication has started: what was journaled before is not told again. */
  let telling: Replication | null = null;
  subscriber.on('error', NOTHING); // the state connection reports the outage
  return {
    store,
    replica,
    rebuildsFromJournal: false,
    view: () => ({ kind: 'redis', ...store.health() }),
    async start({ history, ...parts }) {
      store.hadHistory(history);
      replication = new Replication({ ...parts, store, subscriber });
      await replication.start();
      telling = replication;
      const { up, error } = store.health();
      if (!up) log.warn(downLine(redis, error));
    },
    written: (record) => telling?.written(record),
    locally: (apply) => store.asRemote(apply),
    async action(session, act) {
      if (session !== null) await store.refresh(session);
      const mark = replication?.mark() ?? 0;
      const result = await act();
      await replication?.shared(mark);
      return result;
    },
    close() {
      store.close();
      subscriber.disconnect();
    },
  };
}
