#!/usr/bin/env node
// Shared state, one command: trajgate alone with the memory store, alone with Redis, and three
// replicas sharing Redis — aggregate req/s with the load spread over the replicas, latency per
// decision one request at a time, and pause propagation between replicas. Ratios are against
// the single memory process measured in the same run. See bench/README.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, busyBefore, log, pin, pinned, runTmp } from '../run-setup.mjs';
import { run, stop, which } from '../proxy/procs.mjs';
import { startFloor } from '../proxy/targets.mjs';
import { cpuReading } from './cpu.mjs';
import { oneAtATime, spread } from './load.mjs';
import { pausePropagation } from './pause.mjs';
import { storeMetrics } from './metrics.mjs';
import { report } from './report.mjs';
import {
  configLines,
  ids,
  startEcho,
  startGateway,
  startRedis,
  startUpstream,
} from './targets.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const main = join(root, 'bin/trajgate.cjs');

const { int } = benchArgs({
  agents: { type: 'string', default: '600' },
  pauses: { type: 'string', default: '100' },
  latency: { type: 'string', default: '5' },
  replicas: { type: 'string', default: '3' },
});
const opt = {
  duration: int('duration'),
  warmup: int('warmup'),
  connections: int('connections'),
  agents: int('agents'),
  pauses: int('pauses'),
  latency: int('latency'),
  replicas: int('replicas'),
};
if (!which('wrk')) throw new Error('wrk is not installed (apt-get install -y wrk)');
if (opt.replicas < 2) throw new Error('--replicas must be at least 2');

const cpuBusyBefore = await busyBefore();
const tmp = runTmp('state');
const children = [];
const keep = (x) => (children.push(x.child), x);
const [allowed, counted, stranger, echo] = [
  keep(await startUpstream(here)),
  keep(await startUpstream(here)),
  keep(await startUpstream(here)),
  keep(await startEcho()),
];
const redis = keep(await startRedis(tmp));
// Redis itself from the gateways' core, one GET at a time: the floor under the added latency.
const floorRun = await run(
  ...pin(1, process.execPath, [join(here, 'redis-floor.mjs'), redis.url]),
  {
    timeoutMs: 60_000,
  },
);
const redisFloor = floorRun.code === 0 ? JSON.parse(floorRun.stdout) : { error: floorRun.stderr };
const loadAgents = ids('ag-', opt.agents);
const pauseAgents = ids('pz-', opt.pauses);
const lines = configLines({
  agents: [...loadAgents, ...pauseAgents],
  allowed: allowed.port,
  counted: counted.port,
  stranger: stranger.port,
  echo: echo.port,
});
const url = {
  counted: `http://127.0.0.1:${counted.port}/`,
  allowlisted: `http://127.0.0.1:${allowed.port}/`,
};

/** Throughput of both kinds of request over `gateways`, then latency on the first one. */
async function measure(label, gateways) {
  const out = {};
  for (const [kind, target] of Object.entries(url)) {
    log(`${label}: ${kind} requests, ${opt.warmup} s warm-up + ${opt.duration} s`);
    const load = { here, gateways, url: target, agents: loadAgents, connections: opt.connections };
    await spread({ ...load, seconds: opt.warmup });
    const cpu = cpuReading([...gateways.map((g) => g.child.pid), redis.child.pid]);
    out[kind] = await spread({ ...load, seconds: opt.duration });
    const us = cpu.perRequestUs(out[kind].requests ?? 0);
    const redisUs = us.pop();
    out[kind].cpuUsPerRequest = {
      gateways: Number(us.reduce((a, b) => a + b, 0).toFixed(1)),
      redis: gateways.some((g) => g.shared) ? redisUs : 0,
    };
  }
  log(`${label}: latency per decision, one request at a time, ${opt.latency} s`);
  const port = gateways[0].proxy;
  const one = { here, port, url: url.counted, agents: loadAgents };
  await oneAtATime({ ...one, seconds: 1 });
  out.latency = await oneAtATime({ ...one, seconds: opt.latency });
  out.store = await storeMetrics(gateways[0].admin);
  return out;
}

async function withGateways(label, specs, body) {
  const gateways = [];
  try {
    for (const s of specs)
      gateways.push(
        await startGateway({
          main,
          dir: join(tmp, `${label.replace(/\W+/g, '-')}-${s.name}`),
          lines,
          ...s,
        }),
      );
    return await body(gateways);
  } finally {
    for (const g of gateways) await stop(g.child, 5000);
  }
}

const results = {};
// How fast this host is now: bench/proxy's minimal Node forwarder under the same load.
const floor = await startFloor({ here: join(here, '../proxy'), pin });
if (floor.skipped === undefined) {
  log(`host reference: minimal forwarder, ${opt.warmup} s warm-up + ${opt.duration} s`);
  const load = { here, gateways: [{ proxy: floor.port }], url: url.allowlisted };
  await spread({ ...load, agents: loadAgents, connections: opt.connections, seconds: opt.warmup });
  results.floor = await spread({
    ...load,
    agents: loadAgents,
    connections: opt.connections,
    seconds: opt.duration,
  });
  await stop(floor.child);
}
results.memory = await withGateways('memory', [{ name: 'memory', redis: null }], (gs) =>
  measure('1 process, memory', gs),
);
results.redis = await withGateways(
  'redis',
  [{ name: 'single', redis, prefix: 'bench-single:' }],
  (gs) => measure('1 process, Redis', gs),
);
const names = Array.from({ length: opt.replicas }, (_, i) => `replica-${i + 1}`);
results.replicasOneCore = await withGateways(
  'replicas on core 1',
  names.map((name) => ({ name, redis, prefix: 'bench-one-core:' })),
  (gs) => measure(`${gs.length} replicas on core 1, Redis`, gs),
);
results.replicas = await withGateways(
  'replicas',
  names.map((name) => ({ name, redis, prefix: 'bench-replicas:', cpus: '0,1' })),
  async (gs) => {
    const out = await measure(`${gs.length} replicas on cores 0-1, Redis`, gs);
    log(
      `${gs.length} replicas: pause propagation, ${opt.pauses} samples (A: ${gs[0].name}, B: ${gs[1].name})`,
    );
    out.pause = await pausePropagation({
      a: gs[0],
      b: gs[1],
      echo: echo.port,
      stranger: stranger.port,
      agents: pauseAgents,
    });
    return out;
  },
);
for (const c of children) await stop(c);

const meta = {
  date: new Date().toISOString(),
  node: process.version,
  kernel: release(),
  cores: availableParallelism(),
  pinning: pinned
    ? 'wrk, upstreams, echo server and redis-server on core 0; trajgate on core 1, but the last replicas on cores 0-1'
    : 'none (fewer than 2 cores or no taskset)',
  cpuBusyBefore: Number(cpuBusyBefore.toFixed(3)),
  options: opt,
  redisFloor,
};
const { text, checks } = report(results, meta);
log('\n' + text);
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(
  join(root, 'bench/out/state.json'),
  JSON.stringify({ meta, results, checks }, null, 2) + '\n',
);
log(`\nwrote bench/out/state.json`);
