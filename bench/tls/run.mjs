#!/usr/bin/env node
// One command, one run: intercepted HTTPS requests/s through trajgate, the lean floor (its
// engine with no policy), mitmproxy (mitmdump), Squid ssl-bump and sandbox-runtime's
// TLS-terminating proxy against the same local HTTPS
// upstream, keep-alive, 50 connections; peak RSS of each proxy (its whole process group); and
// the first TLS handshake to a never-seen host through trajgate. Direct (no proxy) is measured as the ceiling. See README.md.
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSnapshot, otherLoad, peakRssMB } from '../proxy/proc-stats.mjs';
import { firstJsonLine, run, start, stop } from '../proxy/procs.mjs';
import { benchArgs, busyBefore, log, pin, pinned, runTmp } from '../run-setup.mjs';
import { startInterceptingTrajgate } from '../proxy/targets.mjs';
import {
  startLeanFloorTls,
  startMitmproxy,
  startSandboxRuntimeTls,
  startSquidBump,
} from './peers.mjs';
import { median } from './request-loops.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const fixtures = join(root, 'test/fixtures/tls');

const { int } = benchArgs({ hosts: { type: 'string', default: '15' } });
const opt = {
  duration: int('duration'),
  warmup: int('warmup'),
  connections: int('connections'),
  hosts: Math.min(int('hosts'), 250),
};
if (!existsSync(join(root, 'dist/cli/main.js')))
  throw new Error('dist/cli/main.js not found: npm run build');

const cpuBusyBefore = await busyBefore();
const tmp = runTmp('tls');

const upstreamChild = start(...pin(0, process.execPath, [join(here, 'upstream.mjs')]));
const { port: upstreamPort } = await firstJsonLine(upstreamChild);
const target = `https://127.0.0.1:${upstreamPort}/`;
// Never-seen hosts for the first-handshake samples: all loopback (127.0.0.0/8).
const newHosts = Array.from({ length: opt.hosts }, (_, i) => `127.0.0.${i + 2}`);

async function load(proxyUrl, ca) {
  const args = [join(here, 'load.mjs'), '--target', target, '--ca', ca];
  if (proxyUrl) args.push('--proxy', proxyUrl);
  const probe = await run(...pin(0, process.execPath, [...args, '--probe']), { timeoutMs: 15_000 });
  const probed = JSON.parse(probe.stdout.trim().split('\n').pop() || '{}');
  if (probed.status !== 200)
    return { skipped: `probe failed: ${JSON.stringify(probed)} ${probe.stderr}` };
  const flags = ['--connections', `${opt.connections}`, '--duration', `${opt.duration}`];
  flags.push('--warmup', `${opt.warmup}`);
  const r = await run(...pin(0, process.execPath, [...args, ...flags]), {
    timeoutMs: (opt.duration + opt.warmup + 30) * 1000,
  });
  if (r.code !== 0) return { skipped: `load client exited ${r.code}: ${r.stderr.trim()}` };
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

/** Runs the load against a started proxy (or direct) and reads its peak RSS afterwards. */
async function measure(name, proxy, ca) {
  // The proxy's process groups: its own and those its helpers moved to (squid's call setsid).
  const groups = () => (proxy ? [proxy.child.pid, ...(proxy.helperGroups?.() ?? [])] : []);
  const before = cpuSnapshot([upstreamChild.pid, ...groups()]);
  const result = await load(proxy ? `http://127.0.0.1:${proxy.port}` : null, ca);
  const last = result.skipped && proxy?.lastLog?.();
  if (last) result.skipped += `; cache.log: ${last}`;
  const other = otherLoad(before, cpuSnapshot([upstreamChild.pid, ...groups()]));
  const rss = groups().map(peakRssMB).filter(Boolean);
  const row = {
    name,
    ...result,
    peakRssMB: rss.length ? rss.reduce((sum, r) => sum + r.mb, 0) : null,
    processes: rss.length ? rss.reduce((sum, r) => sum + r.processes, 0) : null,
    otherLoad: other,
  };
  log(
    `${name}: ${result.skipped ?? `${Math.round(result.rps)} req/s, p99 ${result.p99?.toFixed(1)} ms`}`,
  );
  return row;
}

const rows = [];
let handshake = null;

rows.push(await measure('direct', null, join(fixtures, 'ca.pem')));

const trajgate = await startInterceptingTrajgate({
  root,
  tmp,
  pin,
  intercept: [`127.0.0.1:${upstreamPort}`, ...newHosts.map((h) => `${h}:443`)],
  allow: [`GET https://127.0.0.1:${upstreamPort}/`],
  ports: [443, upstreamPort],
});
if (trajgate.skipped) {
  rows.push({ name: 'trajgate', skipped: trajgate.skipped });
  log(`trajgate: ${trajgate.skipped}`);
} else {
  rows.push(await measure('trajgate', trajgate, trajgate.ca));
  const hs = await run(
    ...pin(0, process.execPath, [
      join(here, 'handshake.mjs'),
      '--proxy-port',
      `${trajgate.port}`,
      '--hosts',
      newHosts.join(','),
      '--ca',
      trajgate.ca,
    ]),
    { timeoutMs: 60_000 },
  );
  if (hs.code === 0) {
    const { first, cached } = JSON.parse(hs.stdout.trim().split('\n').pop());
    handshake = {
      hosts: newHosts.length,
      firstMs: first,
      cachedMs: cached,
      firstMedianMs: median(first),
      firstMaxMs: Math.max(...first),
      cachedMedianMs: median(cached),
    };
    log(
      `trajgate first handshake to a new host: median ${handshake.firstMedianMs.toFixed(2)} ms ` +
        `(max ${handshake.firstMaxMs.toFixed(2)}), cached ${handshake.cachedMedianMs.toFixed(2)} ms`,
    );
  } else {
    handshake = { skipped: `handshake client exited ${hs.code}: ${hs.stderr.trim()}` };
  }
  // Peak RSS after everything trajgate did, handshakes included.
  rows.at(-1).peakRssMB = peakRssMB(trajgate.child.pid)?.mb ?? null;
  await stop(trajgate.child);
}

const peers = [
  ['lean-floor', startLeanFloorTls],
  ['mitmproxy', startMitmproxy],
  ['squid-bump', startSquidBump],
  ['sandbox-runtime', startSandboxRuntimeTls],
];
for (const [name, startPeer] of peers) {
  const peer = await startPeer({ tmp, pin, fixtures, root });
  if (peer.skipped) {
    rows.push({ name, skipped: peer.skipped });
    log(`${name}: ${peer.skipped}`);
    continue;
  }
  try {
    rows.push(await measure(name, peer, peer.ca));
    if (peer.version) rows.at(-1).version = peer.version;
  } finally {
    await stop(peer.child, 5000); // squid takes ~3 s to shut down even with shutdown_lifetime 0
  }
}
await stop(upstreamChild);

// ---- report ------------------------------------------------------------------------------
const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
const usable = (r) => r && !r.skipped && r.errors === 0 && r.non2xx === 0 && r.requests > 0;
const ratio = (a, b, key = 'rps') =>
  usable(a) && usable(b) && a[key] != null && b[key] != null ? a[key] / b[key] : null;
const t = byName.trajgate;
const sr = byName['sandbox-runtime'];
const ratios = {
  trajgateOverSquidBump: ratio(t, byName['squid-bump']),
  // sandbox-runtime: trajgate 3× better on each figure (p99 and RSS: theirs over ours).
  trajgateOverSandboxRuntime: ratio(t, sr),
  sandboxRuntimeOverTrajgateP99: ratio(sr, t, 'p99'),
  sandboxRuntimeOverTrajgatePeakRss: ratio(sr, t, 'peakRssMB'),
  trajgateOverMitmproxy: ratio(t, byName.mitmproxy),
  // The engine with no policy, same run: which part of a missed target is whose.
  leanFloorOverSquidBump: ratio(byName['lean-floor'], byName['squid-bump']),
  leanFloorOverSandboxRuntime: ratio(byName['lean-floor'], sr),
  trajgateOverLeanFloor: ratio(t, byName['lean-floor']),
  trajgateOverDirect: ratio(t, byName.direct),
  squidBumpOverDirect: ratio(byName['squid-bump'], byName.direct),
  mitmproxyOverDirect: ratio(byName.mitmproxy, byName.direct),
};
const atLeast = (value, floor) => (value === null ? null : value >= floor);
const targets = {
  'trajgate/squid-bump req/s >= 1': atLeast(ratios.trajgateOverSquidBump, 1),
  'trajgate/sandbox-runtime req/s >= 3': atLeast(ratios.trajgateOverSandboxRuntime, 3),
  'sandbox-runtime/trajgate p99 >= 3': atLeast(ratios.sandboxRuntimeOverTrajgateP99, 3),
  'sandbox-runtime/trajgate peak RSS >= 3': atLeast(ratios.sandboxRuntimeOverTrajgatePeakRss, 3),
  'trajgate peak RSS <= 200 MB': usable(t) && t.peakRssMB !== null ? t.peakRssMB <= 200 : null,
  'first handshake (median) <= 20 ms':
    handshake?.firstMedianMs != null ? handshake.firstMedianMs <= 20 : null,
};

const pad = (s, n) => String(s).padEnd(n);
const num = (x, d = 0) => (typeof x === 'number' ? x.toFixed(d) : '-');
log('');
log(
  `${pad('target', 17)}${pad('req/s', 9)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}` +
    `${pad('peak RSS MB (processes)', 25)}${pad('errors', 8)}other load`,
);
for (const r of rows) {
  if (r.skipped) {
    log(`${pad(r.name, 17)}${r.skipped}`);
    continue;
  }
  log(
    `${pad(r.name, 17)}${pad(num(r.rps), 9)}${pad(num(r.p50, 2), 9)}${pad(num(r.p99, 2), 9)}` +
      `${pad(r.peakRssMB === null ? '-' : `${num(r.peakRssMB, 1)} (${r.processes})`, 25)}` +
      `${pad(r.errors + r.non2xx, 8)}${(r.otherLoad * 100).toFixed(1)} %`,
  );
}
log('');
for (const [k, v] of Object.entries(ratios)) log(`${k}: ${v === null ? 'n/a' : v.toFixed(2)}`);
for (const [k, v] of Object.entries(targets))
  log(`target ${k}: ${v === null ? 'n/a' : v ? 'met' : 'NOT met'}`);

const out = {
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    kernel: release(),
    node: process.version,
    pinned,
  },
  options: opt,
  cpuBusyBefore,
  sandboxRuntime: sr?.version ?? null,
  rows,
  handshake,
  ratios,
  targets,
};
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(join(root, 'bench/out/tls.json'), JSON.stringify(out, null, 2) + '\n');
log('\nwrote bench/out/tls.json');
