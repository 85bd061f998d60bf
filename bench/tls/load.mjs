// Load client: `connections` concurrent loops of keep-alive HTTPS GETs for `duration` seconds
// after `warmup`, through an HTTP proxy (undici ProxyAgent: one CONNECT per connection, TLS
// inside, kept alive) or straight at the upstream. The client trusts only `--ca` (the proxy's
// CA, or the upstream's for direct). `--header 'Name: value'` (repeatable) goes on every
// request. Prints one JSON line (request-loops.mjs): requests/s, latency percentiles, errors;
// with `--cpu-pid`, that process's CPU per request. `--probe` sends one request and prints its
// status instead.
import { readFileSync } from 'node:fs';
import { Agent, ProxyAgent } from 'undici';
import { loadArgs, runLoad } from './request-loops.mjs';

const values = loadArgs({
  connections: { type: 'string', default: '50' },
  header: { type: 'string', multiple: true, default: [] },
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

const headers = Object.fromEntries(
  values.header.map((line) => {
    const colon = line.indexOf(':');
    if (colon < 1) throw new Error(`--header ${JSON.stringify(line)}: expected "Name: value"`);
    return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
  }),
);
const options = { origin: target.origin, path: target.pathname, method: 'GET', headers };

async function once() {
  const res = await dispatcher.request(options);
  await res.body.dump();
  return res.statusCode;
}

await runLoad(values, { concurrency: connections, once });
await Promise.race([dispatcher.destroy(), new Promise((r) => setTimeout(r, 2000))]);
process.exit(0);
