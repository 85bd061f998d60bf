// The floor under "Redis added latency": sequential GETs from a Node process on the gateways'
// core to the bench's redis-server, timed one by one. Prints {"p50ms","p99ms","n"}.
// Usage: node redis-floor.mjs REDIS_URL [COUNT]
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(join(import.meta.dirname, '../../package.json'));
const { Redis } = require('ioredis');
const [url, count = '3000'] = process.argv.slice(2);
const redis = new Redis(url, { maxRetriesPerRequest: 0 });
const times = [];
for (let i = 0; i < Number(count); i++) {
  const t = performance.now();
  await redis.get('bench-floor');
  times.push(performance.now() - t);
}
redis.disconnect();
times.sort((a, b) => a - b);
const at = (p) =>
  Number(times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)].toFixed(3));
process.stdout.write(JSON.stringify({ p50ms: at(0.5), p99ms: at(0.99), n: times.length }) + '\n');
