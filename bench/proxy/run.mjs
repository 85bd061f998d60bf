#!/usr/bin/env node
// One command, one run: direct, the floor forwarder, squid and trajgate against the same
// upstream — HTTP req/s and p99 (wrk), CONNECT tunnel MB/s, peak RSS. See README.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, busyBefore, log, pin, pinned, runTmp } from '../run-setup.mjs';
import { cpuSnapshot, otherLoad, peakRssMB } from './proc-stats.mjs';
import { firstJsonLine, run, start, stop, which } from './procs.mjs';
import { report } from './report.mjs';
import { startFloor, startSquid, startTrajgate } from './targets.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

const { values, int } = benchArgs({
  threads: { type: 'string', default: '1' },
  'tunnel-mib': { type: 'string', default: '512' },
  'tunnel-runs': { type: 'string', default: '3' },
  trajgate: { type: 'boolean', default: false },
});
const opt = {
  duration: int('duration'),
  connections: int('connections'),
  threads: int('threads'),
  warmup: int('warmup'),
  tunnelBytes: int('tunnel-mib') * 2 ** 20,
  tunnelRuns: int('tunnel-runs'),
};
if (opt.threads > opt.connections) throw new Error('--threads must not exceed --connections');
if (!which('wrk')) throw new Error('wrk is not installed (apt-get install -y wrk)');

const cpuBusyBefore = await busyBefore();
const tmp = runTmp('proxy');

const upstreamChild = start(...pin(0, process.execPath, [join(here, 'upstream.mjs')]));
const upstream = await firstJsonLine(upstreamChild);
const targetUrl = `http://127.0.0.1:${upstream.http}/`;

/** One request through the proxy (or direct), so a proxy that answers 403 is not benchmarked. */
function probe(proxyPort) {
  return new Promise((resolve) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port: proxyPort ?? upstream.http,
        path: proxyPort ? targetUrl : '/',
        headers: { host: `127.0.0.1:${upstream.http}` },
        agent: false,
        timeout: 5000,
      },
      (res) => {
        let length = 0;
        res.on('data', (d) => (length += d.length));
        res.on('end', () =>
          resolve(res.statusCode === 200 && length === 64 ? null : `probe got ${res.statusCode}`),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('probe timed out')));
    req.on('error', (err) => resolve(`probe failed: ${err.message}`));
  });
}

const toMs = { us: 1e-3, ms: 1, s: 1e3 };
async function wrk(proxyPort, seconds) {
  const args = [
    '-t',
    `${opt.threads}`,
    '-c',
    `${opt.connections}`,
    '-d',
    `${seconds}s`,
    '--latency',
  ];
  const env = { ...process.env, TARGET_URL: targetUrl };
  if (proxyPort) args.push('-s', join(here, 'proxy.lua'), `http://127.0.0.1:${proxyPort}/`);
  else args.push(targetUrl);
  const r = await run(...pin(0, 'wrk', args), { env, timeoutMs: (seconds + 30) * 1000 });
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(r.stdout);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)$/m.exec(r.stdout);
  if (r.code !== 0 || !rps || !p99) return { error: `wrk exited ${r.code}: ${r.stderr.trim()}` };
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    r.stdout,
  );
  return {
    rps: Number(rps[1]),
    p99ms: Number(p99[1]) * toMs[p99[2]],
    requests: Number(/(\d+) requests in/.exec(r.stdout)[1]),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.stdout)?.[1] ?? 0),
    socketErrors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

async function tunnel(proxyPort) {
  const runs = [];
  for (let i = 0; i < opt.tunnelRuns; i++) {
    const args = [join(here, 'tunnel-client.mjs'), '--target', `127.0.0.1:${upstream.sink}`];
    args.push('--bytes', `${opt.tunnelBytes}`, '--timeout', '120000');
    if (proxyPort) args.push('--proxy', `127.0.0.1:${proxyPort}`);
    const r = await run(...pin(0, process.execPath, args), { timeoutMs: 125_000 });
    if (r.code !== 0) return { error: r.stderr.trim() || `tunnel client exited ${r.code}` };
    runs.push(JSON.parse(r.stdout).MBps);
  }
  const sorted = [...runs].sort((a, b) => a - b);
  return { MBps: sorted[Math.floor(sorted.length / 2)], runs };
}

/**
 * HTTP then tunnel; for a proxy, peak RSS after each (the tunnel push often sets the peak),
 * and the share of CPU that other processes took meanwhile.
 */
async function measure(name, proxy) {
  log(`${name}: measuring (warm-up ${opt.warmup} s, ${opt.duration} s wrk, tunnel)`);
  const port = proxy?.port ?? null;
  const groups = proxy ? [upstreamChild.pid, proxy.child.pid] : [upstreamChild.pid];
  const before = cpuSnapshot(groups);
  const failed = await probe(port);
  let httpResult = { error: failed };
  if (!failed) {
    await wrk(port, opt.warmup);
    httpResult = await wrk(port, opt.duration);
  }
  const rssAfterHttp = proxy ? peakRssMB(proxy.child.pid) : null;
  const tunnelResult = await tunnel(port);
  const result = { http: httpResult, tunnel: tunnelResult };
  if (proxy) Object.assign(result, { rssAfterHttp, rss: peakRssMB(proxy.child.pid) });
  result.otherLoad = Number(otherLoad(before, cpuSnapshot(groups)).toFixed(3));
  return result;
}

const results = { direct: await measure('direct', null) };
const ctx = { here, root, tmp, pin, upstream, force: values.trajgate };
for (const [name, startTarget] of [
  ['floor', startFloor],
  ['squid', startSquid],
  ['trajgate', startTrajgate],
]) {
  const target = await startTarget(ctx);
  if (target.skipped) {
    log(`${name}: ${target.skipped}`);
    results[name] = { skipped: target.skipped };
    continue;
  }
  try {
    results[name] = await measure(name, target);
  } finally {
    await stop(target.child, 5000); // squid takes ~3 s to shut down even with shutdown_lifetime 0
  }
}
await stop(upstreamChild);

const firstLine = (cmd, args) => {
  const path = which(cmd);
  return path
    ? run(path, args, { timeoutMs: 5000 }).then((r) => (r.stdout || r.stderr).split('\n')[0])
    : null;
};
const meta = {
  date: new Date().toISOString(),
  node: process.version,
  kernel: release(),
  cpu: /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown',
  cores: availableParallelism(),
  wrk: (await firstLine('wrk', ['-v']))?.replace(/\s*Copyright.*$/, ''),
  squid: await firstLine('squid', ['-v']),
  pinning: pinned
    ? 'wrk, tunnel client and upstream on core 0 (direct: upstream shares core 0 with wrk); proxy under test on core 1'
    : 'none (fewer than 2 cores or no taskset)',
  cpuBusyBefore: Number(cpuBusyBefore.toFixed(3)),
  options: opt,
};
const { text, checks } = report(results, meta);
log('\n' + text);
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(
  join(root, 'bench/out/proxy.json'),
  JSON.stringify({ meta, results, checks }, null, 2) + '\n',
);
log(`\nwrote bench/out/proxy.json`);
