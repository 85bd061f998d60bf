import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { isTrajgateError } from '../../src/errors.js';
import { PendingRing } from '../../src/guard/pending.js';
import { fresh } from '../../src/guard/store.js';
import { decodeSession, encodeSession } from '../../src/guard/state-codec.js';
import { redisWhere, replicaName } from '../../src/state/connect.js';

/** `state` is validated naming the key; a session's state survives the trip through JSON. */
function errorsOf(yaml: string): string {
  try {
    parseConfig(`version: 1\n${yaml}\n`, 'test.yaml', '/tmp');
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    return [err.message, ...err.details].join('\n');
  }
  return '';
}

describe('state config', () => {
  it('defaults to the embedded store, with no Redis', () => {
    const config = parseConfig('version: 1\n', 'test.yaml', '/tmp');
    expect(config.state).toEqual({ store: 'memory' });
  });

  it('takes a redis store with its defaults', () => {
    const config = parseConfig(
      'version: 1\nstate: { store: redis, redis: { url: "redis://127.0.0.1:6379/0" } }\n',
      'test.yaml',
      '/tmp',
    );
    expect(config.state.redis).toEqual({
      url: 'redis://127.0.0.1:6379/0',
      prefix: 'trajgate:',
      timeout: 1_000,
    });
  });

  it.each([
    ['state: { store: redis }', 'state.redis', 'needs redis: { url }'],
    ['state: { store: sqlite }', 'state.store', 'memory'],
    ['state: { store: redis, redis: { url: "http://x" } }', 'state.redis.url', 'redis://'],
    [
      'state: { store: redis, redis: { url: "redis://x", timeout: 0s } }',
      'state.redis.timeout',
      'duration',
    ],
    [
      'state: { store: redis, redis: { url: "redis://x", replica: "a b" } }',
      'state.redis.replica',
      'letters',
    ],
    ['state: { store: redis, redis: { url: "redis://x", hosts: 2 } }', 'state.redis', 'hosts'],
  ])('names the key in %s', (yaml, key, words) => {
    const errors = errorsOf(yaml);
    expect(errors).toContain(key);
    expect(errors).toContain(words);
  });

  it('shows where the store is without its password', () => {
    const where = redisWhere({
      url: 'redis://user:s3cret-pass@db:6379/2',
      prefix: 'p:',
      timeout: 1,
    });
    expect(where).not.toContain('s3cret');
    expect(where).toContain('db:6379/2');
    expect(replicaName({ url: 'redis://x', prefix: 'p:', timeout: 1, replica: 'gw-a' })).toBe(
      'gw-a',
    );
  });
});

describe('session state codec', () => {
  it('reads back what it writes: counts, pause, events, marks, pending events, bytes sent', () => {
    const state = fresh();
    state.counts.set('network', 2);
    state.pausedAt = 1_000;
    state.pausedBy = 'network';
    state.events = 7;
    state.marks.set('r', { rule: 'r', seq: 3, eventNo: 2, ts: 900, what: 'read /k' });
    const ring = new PendingRing();
    ring.push({ rid: 4, seq: 4, eventNo: 3, ts: 950, kind: 'network', target: 'x', rules: ['r'] });
    state.pending = ring;
    state.sent.set(4, { ts: 960, bytes: 10 });
    state.sentBytes = 10;
    const back = decodeSession(JSON.parse(JSON.stringify(encodeSession(state))), 'k');
    expect(encodeSession(back)).toEqual(encodeSession(state));
    expect(back.sentBytes).toBe(10);
  });

  it.each([
    [null, 'not a session state object'],
    [{ format: 2 }, 'state format 2 is not 1'],
    [{ ...encodeSession(fresh()), events: -1 }, '"events" is not a count'],
    [{ ...encodeSession(fresh()), marks: [{ rule: 1 }] }, 'malformed mark'],
    [{ ...encodeSession(fresh()), sent: [[1, 2]] }, 'malformed entry'],
    [{ ...encodeSession(fresh()), pausedBy: 3 }, '"pausedBy" is not a string'],
  ])('refuses %j naming the key and what is wrong', (value, why) => {
    expect(() => decodeSession(value, 'trajgate:s:agent-1')).toThrow(
      expect.objectContaining({ code: 'E_STORE_CORRUPT', message: expect.stringContaining(why) }),
    );
    expect(() => decodeSession(value, 'trajgate:s:agent-1')).toThrow(/trajgate:s:agent-1/);
  });
});
