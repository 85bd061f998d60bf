import { hostname } from 'node:os';
import type { Redis, RedisOptions } from 'ioredis';
import { TrajgateError } from '../errors.js';
import { lazy } from '../lazy.js';
import type { StateConfig } from '../config/state-schema.js';

const ioredis = lazy<typeof import('ioredis')>('ioredis');

export type RedisConfig = NonNullable<StateConfig['redis']>;

/** Told of each store command's time and failure, and of the store going down or up. */
export interface StoreMonitor {
  storeOp(op: string, seconds: number): void;
  storeError(op: string): void;
  storeUp(up: boolean): void;
}

/** Whether the shared store answers, and why not (GET /api/health, the admin API's 503s). */
export interface StoreHealth {
  readonly up: boolean;
  readonly error: string | null;
}

/** This gateway's name among the replicas: in approval ids and in the messages it publishes. */
export function replicaName(config: RedisConfig): string {
  return (
    config.replica ??
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 64)
  );
}

/**
 * A connection to the shared store. Commands never queue while it is down (they fail at once,
 * and the decision fails closed); ioredis reconnects on its own, so recovery needs nobody.
 */
export function connectRedis(config: RedisConfig, role: string): Redis {
  const options: RedisOptions = {
    connectionName: `trajgate-${role}`,
    lazyConnect: true,
    connectTimeout: Math.max(config.timeout, 1_000),
    commandTimeout: config.timeout,
    enableOfflineQueue: role === 'bus',
    // Commands of many sessions issued in one turn go out in one write.
    enableAutoPipelining: role === 'state',
    maxRetriesPerRequest: role === 'bus' ? null : 0,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1_000),
  };
  const { Redis: Client } = ioredis();
  if (config.url.startsWith('unix://')) return new Client({ ...options, path: unixPath(config) });
  return new Client(config.url, options);
}

function unixPath(config: RedisConfig): string {
  return decodeURIComponent(new URL(config.url).pathname);
}

/** Where the store is, for messages: the URL without its password. */
export function redisWhere(config: RedisConfig): string {
  if (config.url.startsWith('unix://')) return config.url;
  const url = new URL(config.url);
  url.password = '';
  url.username = '';
  return url.href;
}

/** A store command's failure as the error decisions and the admin API report. */
export function storeDown(config: RedisConfig, err: unknown): TrajgateError {
  if (err instanceof TrajgateError) return err;
  const why = err instanceof Error ? err.message : String(err);
  return new TrajgateError(
    'E_STORE_DOWN',
    `trajgate cannot reach its state store (${redisWhere(config)}): ${why}`,
  );
}
