import { describe, expect, it } from 'vitest';
import { TrajgateError } from '../../src/errors.js';
import type { EventRecord } from '../../src/journal/records.js';
import { connectRedis } from '../../src/state/connect.js';
import type { RedisConfig } from '../../src/state/connect.js';
import { RedisStore } from '../../src/state/redis-store.js';
import { startRedis } from '../helpers/redis.js';

/**
 * The shared store against a real redis-server: what one gateway commits under a session's
 * lease another reads; leases of one session are taken one at a time across stores (no update
 * is lost); what is not ours, and a store that is down or came back empty, refuses.
 */
const redis = await startRedis();
let prefixes = 0;

const quiet = { storeOp: () => undefined, storeError: () => undefined, storeUp: () => undefined };

async function stores(n: number, prefix = `t${++prefixes}:`): Promise<RedisStore<EventRecord>[]> {
  const config: RedisConfig = { url: redis.url, prefix, timeout: 1_000 };
  const out: RedisStore<EventRecord>[] = [];
  for (let i = 0; i < n; i++) {
    const store = new RedisStore<EventRecord>(
      connectRedis(config, 'state'),
      config,
      `r${i}`,
      quiet,
    );
    await store.connect();
    await store.checkEpoch();
    out.push(store);
  }
  return out;
}

/** Decides as the pipeline does: under the lease, reads the count, commits one more. */
async function countOne(store: RedisStore<EventRecord>, id: string): Promise<void> {
  const lease = await store.lease(id);
  const n = store.session(id)?.counts.get('network') ?? 0;
  store.commit(id, { counted: { network: n + 1 }, pause: null });
  await lease.release();
}

describe('RedisStore', () => {
  it('shares what is committed under a lease: another store reads it at its next lease', async () => {
    const [a, b] = await stores(2);
    await countOne(a!, 's');
    const lease = await a!.lease('s');
    a!.commit('s', { counted: null, pause: { at: 1_000, by: 'network' } });
    await lease.release();
    const read = await b!.lease('s');
    await read.release();
    expect(Object.fromEntries(b!.session('s')!.counts)).toEqual({ network: 1 });
    expect(b!.session('s')!.pausedAt).toBe(1_000);
    for (const s of [a, b]) s!.close();
  });

  it('loses no update when two stores decide the same session at once, many times', async () => {
    const [a, b, c] = await stores(3);
    const all = [a!, b!, c!];
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      await Promise.all(Array.from({ length: 30 }, (_, i) => countOne(all[i % 3]!, id)));
      await c!.refresh(id);
      expect(c!.session(id)!.counts.get('network')).toBe(30);
    }
    for (const s of all) s.close();
  });

  it('writes a change made outside a decision (a resume) in the background', async () => {
    const [a, b] = await stores(2);
    const lease = await a!.lease('r');
    a!.commit('r', { counted: { network: 2 }, pause: { at: 5, by: 'network' } });
    await lease.release();
    b!.resume('r', false);
    // The next lease of the session on b waits for b's own write.
    const after = await b!.lease('r');
    await after.release();
    await a!.refresh('r');
    expect(a!.session('r')!.pausedAt).toBeNull();
    expect(a!.session('r')!.counts.get('network')).toBe(2);
    for (const s of [a, b]) s!.close();
  });

  it('refuses a shared record that is not what trajgate wrote, naming the key', async () => {
    const [a] = await stores(1, 'corrupt:');
    const raw = redis.client();
    for (const [value, why] of [
      ['{not json', 'not JSON'],
      ['{"v":1,"state":{"format":7}}', 'state format 7 is not 1'],
      ['{"v":1,"state":{"format":1,"counts":{"network":-1}}}', '"counts.network" is not a count'],
      ['{"v":"x","state":{}}', '"v" is not a version number'],
    ] as const) {
      await raw.set('corrupt:s:bad', value);
      const err = await a!.lease('bad').then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TrajgateError);
      expect((err as TrajgateError).code).toBe('E_STORE_CORRUPT');
      expect((err as TrajgateError).message).toContain('corrupt:s:bad');
      expect((err as TrajgateError).message).toContain(why);
    }
    // The lease of a refused session is not left behind: a good record is read at once.
    await raw.del('corrupt:s:bad', 'corrupt:lock:bad');
    await countOne(a!, 'bad');
    a!.close();
  });

  it('notices a store that came back empty and refuses until a rebuild names a new epoch', async () => {
    const [a] = await stores(1, 'empty:');
    await countOne(a!, 'e');
    const raw = redis.client();
    await raw.del('empty:epoch', 'empty:s:e', 'empty:sessions');
    await a!.checkEpoch();
    expect(a!.health().up).toBe(false);
    const refused = await a!.lease('e').catch((e: unknown) => e as TrajgateError);
    expect((refused as TrajgateError).code).toBe('E_STORE_DOWN');
    expect((refused as TrajgateError).message).toMatch(/came back empty.*state rebuild/);
    await raw.set('empty:epoch', 'rebuilt:1');
    await countOne(a!, 'e');
    expect(a!.health()).toEqual({ up: true, error: null });
    a!.close();
  });

  it('fails closed at once while Redis cannot be reached', async () => {
    const config: RedisConfig = {
      url: 'unix:///nonexistent/redis.sock',
      prefix: 'x:',
      timeout: 200,
    };
    const store = new RedisStore<EventRecord>(connectRedis(config, 'state'), config, 'r', quiet);
    await store.connect().catch(() => undefined);
    const err = (await store.lease('s').catch((e: unknown) => e)) as TrajgateError;
    expect(err.code).toBe('E_STORE_DOWN');
    expect(err.message).toContain(
      'trajgate cannot reach its state store (unix:///nonexistent/redis.sock)',
    );
    expect(store.health().up).toBe(false);
    store.close();
  });
});
