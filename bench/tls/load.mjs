// Load client: `connections` concurrent loops of keep-alive HTTPS GETs for `duration` seconds
// after `warmup`, through an HTTP proxy (undici ProxyAgent: one CONNECT per connection, TLS
// inside, kept alive) or straight at the upstream. The client trusts only `--ca` (the proxy's
// CA, or the upstream's for direct). Prints one JSON line (request-loops.mjs): requests/s,
// latency percentiles, errors; with `--cpu-pid`, that process's CPU per request. `--probe`
// sends one request and prints its status instead.
import { readFileSync } from 'node:fs';
import { Agent, ProxyAgent } from 'undici';
import { loadArgs, runLoad } from './request-loops.mjs';

const values = loadArgs({ connections: { type: 'string', default: '50' } });
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

await runLoad(values, { concurrency: connections, once });
await Promise.race([dispatcher.destroy(), new Promise((r) => setTimeout(r, 2000))]);
process.exit(0);
