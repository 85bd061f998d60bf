// Load client: `connections` concurrent loops of keep-alive HTTPS GETs for `duration` seconds
// after `warmup`, through an HTTP proxy (undici ProxyAgent: one CONNECT per connection, TLS
// inside, kept alive) or straight at the upstream. The client trusts only `--ca` (the proxy's
// CA, or the upstream's for direct). Prints one JSON line: requests/s, latency percentiles,
// errors. `--probe` sends one request and prints its status instead.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Agent, ProxyAgent } from 'undici';

const { values } = parseArgs({
  options: {
    proxy: { type: 'string' },
    target: { type: 'string' },
    ca: { type: 'string' },
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    probe: { type: 'boolean', default: false },
  },
});
const target = new URL(values.target);
const ca = readFileSync(values.ca);
const connections = Number(values.connections);
const dispatcher = values.proxy
  ? new ProxyAgent({
      uri: values.proxy,
      requestTls: { ca },
      connections,
      keepAliveTimeout: 60_000,
    })
  : new Agent({ connect: { ca }, connections, keepAliveTimeout: 60_000 });

const options = { origin: target.origin, path: target.pathname, method: 'GET' };

async function once() {
  const res = await dispatcher.request(options);
  await res.body.dump();
  return res.statusCode;
}

if (values.probe) {
  try {
    process.stdout.write(JSON.stringify({ status: await once() }) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: err.code ?? err.message }) + '\n');
  }
  await dispatcher.close();
  process.exit(0);
}

let recording = false;
let stopped = false;
let requests = 0;
let errors = 0;
let non2xx = 0;
let errorSample = null;
const latencies = [];

async function loop() {
  while (!stopped) {
    const t0 = performance.now();
    try {
      const status = await once();
      if (!recording) continue;
      requests++;
      if (status < 200 || status > 299) non2xx++;
      latencies.push(performance.now() - t0);
    } catch (err) {
      if (recording) errors++;
      errorSample ??= err.code ?? err.message;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

const loops = Array.from({ length: connections }, loop);
await new Promise((r) => setTimeout(r, Number(values.warmup) * 1000));
recording = true;
const started = performance.now();
await new Promise((r) => setTimeout(r, Number(values.duration) * 1000));
recording = false;
const seconds = (performance.now() - started) / 1000;
stopped = true;
await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 5000))]);
latencies.sort((a, b) => a - b);
const pct = (p) =>
  latencies.length === 0
    ? null
    : latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
process.stdout.write(
  JSON.stringify({
    requests,
    seconds,
    rps: requests / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    max: latencies.at(-1) ?? null,
    errors,
    non2xx,
    errorSample,
  }) + '\n',
);
await Promise.race([dispatcher.destroy(), new Promise((r) => setTimeout(r, 2000))]);
process.exit(0);
