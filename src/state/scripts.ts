/**
 * The only code that runs inside Redis: taking a session's lease, and the compare-and-set that
 * writes its state and gives the lease up. The rule itself runs in Node (guard/), never here.
 */

/**
 * KEYS: lock, state, rules version, epoch. ARGV: token, ttl ms. → {1, state or '', rules
 * version or '', epoch or ''} taken, or {0, ms left}. The epoch tells a store whose keys went
 * (FLUSHALL, evicted) or were rebuilt under a live connection.
 */
export const LEASE_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or '',
    redis.call('GET', KEYS[4]) or ''}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

/**
 * KEYS: lock, state, sessions, recent, bus. ARGV: token, new state JSON ('' = unchanged), the
 * version read, now (ms), session id, how many recent events to keep, how many event lines
 * follow, the lines, then the message to publish ('' = none). → 1 written, shared and
 * released; -1 the lease was lost; -2 the version moved. One round trip: the state, the
 * session's recent events and the message announcing them go together, the message after the
 * state it announces.
 */
export const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[2] ~= '' then
  local current = redis.call('GET', KEYS[2])
  local version = 0
  if current then version = tonumber(string.match(current, '^{"v":(%d+),')) or -1 end
  if version ~= tonumber(ARGV[3]) then return -2 end
  redis.call('SET', KEYS[2], '{"v":' .. (version + 1) .. ',"state":' .. ARGV[2] .. '}')
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[5])
end
local lines = tonumber(ARGV[7])
if lines > 0 then
  redis.call('RPUSH', KEYS[4], unpack(ARGV, 8, 7 + lines))
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[6]), -1)
end
if ARGV[8 + lines] ~= '' then redis.call('PUBLISH', KEYS[5], ARGV[8 + lines]) end
redis.call('DEL', KEYS[1])
return 1
`;

/**
 * KEYS: bus. ARGV: how many recent events to keep, the message to publish, then pairs of a
 * session's recent-events key and an event line. → 1. The events of decisions that changed
 * nothing, gathered over one turn of the event loop: one round trip for all of them. (The
 * recent-events keys come as arguments: one Redis, not a cluster, holds a fleet's keys.)
 */
export const SHARE_SCRIPT = `
local keep = tonumber(ARGV[1])
for i = 3, #ARGV, 2 do
  redis.call('RPUSH', ARGV[i], ARGV[i + 1])
  redis.call('LTRIM', ARGV[i], -keep, -1)
end
redis.call('PUBLISH', KEYS[1], ARGV[2])
return 1
`;

/** The scripts as ioredis commands (defineCommand). */
export interface Scripts {
  tgLease(
    lock: string,
    state: string,
    rules: string,
    epoch: string,
    token: string,
    ttl: number,
  ): Promise<[number, string, string?, string?]>;
  tgRelease(
    lock: string,
    state: string,
    sessions: string,
    recent: string,
    bus: string,
    token: string,
    value: string,
    version: number,
    now: number,
    id: string,
    keep: number,
    lines: number,
    ...shared: string[]
  ): Promise<number>;
  tgShare(bus: string, keep: number, message: string, ...recent: string[]): Promise<number>;
}
