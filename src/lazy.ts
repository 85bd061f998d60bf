import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded at its first use rather than at start: a gateway whose config
 * never needs it (no Redis store, no TLS interception) does not carry its code and heap
 * (ioredis and node-forge hold ~5 MB of RSS each once loaded).
 */
export function lazy<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
