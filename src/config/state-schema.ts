import { z } from 'zod';
import { parseDuration } from './formats.js';

/** Where the shared store listens: `redis://` / `rediss://` URLs, or a unix socket. */
const REDIS_URL = /^(rediss?:\/\/[^\s]+|unix:\/\/\/[^\s]+)$/;
const REPLICA = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const timeout = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like 500ms or 2s, got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return ms;
});

const redis = z.strictObject({
  url: z
    .string()
    .regex(REDIS_URL, 'expected redis://HOST:PORT/DB, rediss://… or unix:///path/to/redis.sock'),
  // Several gateways share keys under one prefix; another prefix is another fleet.
  prefix: z.string().min(1).max(64).default('trajgate:'),
  // Names this gateway in ids and messages; default: the host name.
  replica: z
    .string()
    .regex(REPLICA, 'must start with a letter or digit and use only letters, digits, ., _ and -')
    .optional(),
  // How long one store command may take before the decision fails closed.
  timeout: timeout.default(1_000),
});

/**
 * `state`: where the trajectory lives. `memory` (the default) is one process's, rebuilt from
 * its journal; `redis` is shared by every gateway naming the same Redis and prefix.
 */
export const stateSchema = z
  .strictObject({
    store: z.enum(['memory', 'redis']).default('memory'),
    redis: redis.optional(),
  })
  .superRefine((state, ctx) => {
    if (state.store === 'redis' && state.redis === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['redis'],
        message: 'store: redis needs redis: { url } (e.g. redis://127.0.0.1:6379/0)',
      });
    }
  })
  .prefault({});

export type StateConfig = z.output<typeof stateSchema>;
