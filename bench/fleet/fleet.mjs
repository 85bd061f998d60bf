#!/usr/bin/env node
// A fleet, not a handful: `trajgate start` with no `agents`, then --sessions sessions
// (each a client address of 127.0.0.0/8 sending --events requests through the proxy), and in the
// same run: RSS per session, `GET /api/sessions?limit=100` latency, the longest event-loop block
// while the journal rotates (and a probe agent's worst latency then), the snapshot's size,
// restart time, and a steady agent's p99 without and with the review page open in Chromium.
// Prints a table and writes bench/out/fleet.json. See bench/README.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBytes } from '../../dist/config/formats.js';
import { stop } from '../proxy/procs.mjs';
import { memory, pinSelf } from '../review/gateway.mjs';
import { benchArgs, busyBefore, log, runTmp } from '../run-setup.mjs';
import { startUpstream } from '../state/targets.mjs';
import { createSessions, percentile, steady } from './client.mjs';
import { ADMIN_TOKEN, launch, majorGc, shutdown, timedCalls, writeConfig } from './gateway.mjs';
import { openPage } from './page.mjs';
import { report } from './report.mjs';
import {
  journalFiles,
  probe,
  rotations,
  snapshotSize,
  summarize,
  watchRotations,
} from './rotation.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const main = join(root, 'bin/trajgate.cjs');

const { values, int } = benchArgs({
  sessions: { type: 'string', default: '100000' },
  events: { type: 'string', default: '3' },
  concurrency: { type: 'string', default: '64' },
  'api-calls': { type: 'string', default: '200' },
  'agent-seconds': { type: 'string', default: '30' },
  'agent-rate': { type: 'string', default: '20' },
  rounds: { type: 'string', default: '2' },
  rotations: { type: 'string', default: '3' },
  'rotation-seconds': { type: 'string', default: '240' },
  rotate: { type: 'string', default: '8MB' },
  keep: { type: 'string', default: '5' },
});
const opt = {
  sessions: int('sessions'),
  events: int('events'),
  concurrency: int('concurrency'),
  apiCalls: int('api-calls'),
  agentSeconds: int('agent-seconds'),
  agentRate: int('agent-rate'),
  rounds: int('rounds'),
  rotations: int('rotations'),
  rotationSeconds: int('rotation-seconds'),
  rotate: values.rotate,
  keep: int('keep'),
};

// This process, the upstream and Chromium on core 0; trajgate alone on core 1.
const cores = availableParallelism(); // before the pinning narrows what this process sees
const pinned = pinSelf('0');
const cpuBusyBefore = await busyBefore();
const loadBefore = loadavg()[0];
const tmp = runTmp('fleet');
const upstream = await startUpstream(here);
const { file, data } = writeConfig(tmp, { upstream: upstream.port, ...opt });
const results = {};
let gw = await launch(main, file, tmp);
let finished = false;
process.on('exit', () => {
  if (finished) return;
  const status = gw.child.exitCode ?? gw.child.signalCode ?? 'still running';
  log(`the run failed; trajgate: ${status}; its last stderr: ${gw.child.stderrTail.trim()}`);
});
results.start = { readyMs: gw.readyMs };
const mb = () => memory(gw.pid).rss;
const total = async () => (await gw.call('GET', '/api/sessions?limit=1')).json.total;

// 1. The sessions, in tenths so the run shows its progress; rotations happen as the journal
// grows, each with more sessions in its snapshot, and the probe agent sees them.
const rssIdle = mb();
const created = { seconds: 0, requests: 0, failed: { count: 0, first: null } };
let watching = watchRotations(gw, data);
let creating = true;
const probing = probe(gw, upstream.port, () => !creating);
for (let part = 0; part < 10; part++) {
  const from = Math.floor((opt.sessions * part) / 10);
  const to = Math.floor((opt.sessions * (part + 1)) / 10);
  const r = await createSessions({
    proxyPort: gw.proxy,
    upstream: upstream.port,
    from,
    to,
    ...opt,
  });
  created.seconds += r.seconds;
  created.requests += r.requests;
  if (r.failed.count > 0 && created.failed.count === 0) created.failed.first = r.failed.first;
  created.failed.count += r.failed.count;
  log(`sessions: ${to} in ${created.seconds.toFixed(1)} s, RSS ${mb().toFixed(0)} MB`);
}
creating = false;
const rssAfter = mb();
results.sessions = {
  ...created,
  perSecond: opt.sessions / created.seconds,
  listed: await total(),
  rssIdleMB: rssIdle,
  rssAfterMB: rssAfter,
  rssPerSessionKB: ((rssAfter - rssIdle) * 1024) / opt.sessions,
  whileCreating: summarize(await watching.end(), await probing),
};

// 2. The list an operator's tools read, one page of 100 at a time; no other load.
await timedCalls(gw.call, '/api/sessions?limit=100', 10);
watching = watchRotations(gw, data);
const api = await timedCalls(gw.call, '/api/sessions?limit=100', opt.apiCalls);
const quiet = summarize(await watching.end(), []);
results.api = {
  calls: opt.apiCalls,
  p50: percentile(api.times, 50),
  p99: percentile(api.times, 99),
  max: Math.max(...api.times),
  sessionsPerPage: api.last.sessions.length,
  eventLoopMaxMs: quiet.eventLoopMaxMs.away,
};
log(
  `/api/sessions?limit=100: p50 ${results.api.p50.toFixed(1)} ms, p99 ${results.api.p99.toFixed(1)} ms`,
);

// 3. A steady agent without the page, then with it open: --rounds times, alternated. Beside it
// the same client straight to the upstream (an origin server takes the absolute form too): the
// floor, which shows what the page costs the clients' core rather than the gateway.
const agent = async () => {
  const until = performance.now() + opt.agentSeconds * 1000;
  const paced = (port, localAddress) =>
    steady({
      proxyPort: port,
      upstream: upstream.port,
      localAddress,
      everyMs: 1000 / opt.agentRate,
      stopped: () => performance.now() > until,
    });
  const [samples, direct] = await Promise.all([
    paced(gw.proxy, '127.0.0.10'),
    paced(upstream.port, '127.0.0.11'),
  ]);
  const ms = samples.map((s) => s.ms);
  const failed = samples.filter((s) => s.status !== 200).length;
  const floor = direct.map((s) => s.ms);
  return {
    ms,
    floor,
    requests: ms.length,
    failed,
    p50: percentile(ms, 50),
    p99: percentile(ms, 99),
  };
};
const phases = { without: [], with: [] };
for (let round = 0; round < opt.rounds; round++) {
  phases.without.push(await agent());
  const page = await openPage(gw.adminPort, ADMIN_TOKEN);
  const before = page.answers();
  const run = await agent();
  const after = page.answers();
  await page.close();
  run.pageAnswers = after.answers - before.answers;
  run.pageSessionPages = after.sessionPages - before.sessionPages;
  run.pageFailed = after.failed - before.failed;
  phases.with.push(run);
  log(
    `agent round ${round + 1}: p99 ${phases.without.at(-1).p99.toFixed(1)} ms without the page, ${run.p99.toFixed(1)} ms with it (${run.pageSessionPages} /api/sessions pages read by it)`,
  );
}
const pooled = (runs) => {
  const ms = runs.flatMap((r) => r.ms);
  const floor = runs.flatMap((r) => r.floor);
  const [p50, p99] = [percentile(ms, 50), percentile(ms, 99)];
  return { p50, p99, max: Math.max(...ms), directP99: percentile(floor, 99) };
};
const strip = (runs) => runs.map(({ ms: _ms, floor: _floor, ...r }) => r);
results.agent = {
  rate: opt.agentRate,
  without: { ...pooled(phases.without), rounds: strip(phases.without) },
  with: { ...pooled(phases.with), rounds: strip(phases.with) },
};
results.agent.ratio = results.agent.with.p99 / results.agent.without.p99;

// 4. Rotations with every session in the state, and the snapshot they start files with.
results.rotation = await rotations(gw, {
  data,
  upstream: upstream.port,
  rotations: opt.rotations,
  maxSeconds: opt.rotationSeconds,
});
log(
  `rotations: ${results.rotation.rotations} in ${results.rotation.seconds.toFixed(1)} s; event-loop max near one ${results.rotation.eventLoopMaxMs.nearRotation.toFixed(0)} ms`,
);
results.snapshot = await snapshotSize(data);
// The deploy guide's rule: each file is its snapshot plus `rotate` bytes of records.
results.journal = {
  ...journalFiles(data),
  sizingRule: (parseBytes(opt.rotate) + results.snapshot.bytes) * (opt.keep + 1),
};

results.gc = majorGc((await gw.call('GET', '/metrics')).text);

// 5. Restart: SIGTERM, then a start timed from spawn to /api/health's 200.
results.restart = { stop: await shutdown(gw) };
gw = await launch(main, file, tmp);
results.restart.readyMs = gw.readyMs;
results.restart.sessionsListed = await total();
results.restart.rssMB = mb();
await shutdown(gw);
await stop(upstream.child);

const meta = {
  date: new Date().toISOString(),
  node: process.version,
  kernel: release(),
  cores,
  pinning: pinned ? 'trajgate on core 1; the clients, upstream and Chromium on core 0' : 'none',
  cpuBusyBefore: Number(cpuBusyBefore.toFixed(3)),
  loadAverage: { before: loadBefore, after: loadavg()[0] },
  options: opt,
};
log('\n' + report(results, meta));
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(
  join(root, 'bench/out/fleet.json'),
  JSON.stringify({ meta, results }, null, 2) + '\n',
);
log('\nwrote bench/out/fleet.json');
finished = true;
process.exit(0); // not after the grace timers of the stops, which outlive the processes
