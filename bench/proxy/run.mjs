#!/usr/bin/env node
// One command, one run: direct, the floor forwarder, squid, sandbox-runtime's proxy and trajgate
// against the same upstream — HTTP req/s and p99 (wrk) over keep-alive connections and with a new connection per
// request, CONNECT tunnel MB/s (and trajgate's SOCKS5 tunnel beside it), peak RSS; then
// intercepted HTTPS through trajgate, HTTP/1.1 against HTTP/2 (intercepted.mjs), and with
// credential substitution on against off (credentials.mjs), and telemetry.otlp off, to a live
// receiver and to a dead endpoint (otlp.mjs). See README.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, release } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, busyBefore, log, pin, pinned, runTmp } from '../run-setup.mjs';
import { cpuSnapshot, groupCpuTicks, otherLoad, peakRssMB } from './proc-stats.mjs';
import { firstJsonLine, run, start, stop, which } from './procs.mjs';
import { writerChainCost } from './chain-cost.mjs';
import { credentials, credentialsLines } from './credentials.mjs';
import { intercepted, interceptedLines } from './intercepted.mjs';
import { otlp, otlpLines } from './otlp.mjs';
import { report } from './report.mjs';
import {
  startFloor,
  startLeanFloor,
  startSandboxRuntime,
  startSquid,
  startTrajgate,
} from './targets.mjs';
import { tcpSettings, wrkRunner } from './wrk.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

const { values, int } = benchArgs({
  threads: { type: 'string', default: '1' },
  'tunnel-mib': { type: 'string', default: '512' },
  'tunnel-runs': { type: 'string', default: '3' },
  trajgate: { type: 'boolean', default: false },
  // 0 skips the chain on/off phase.
  'chain-seconds': { type: 'string', default: '5' },
  // Only the chain on/off phase (its figure alone; bench/out/proxy.json is not written).
  'chain-only': { type: 'boolean', default: false },
  // Tunnels only: no wrk, no chain phase (a light run on a shared host).
  'tunnel-only': { type: 'boolean', default: false },
  // Only the intercepted phase: HTTP/1.1 and HTTP/2 through trajgate's TLS interception.
  'h2-only': { type: 'boolean', default: false },
  // The intercepted h2 load's connections; the --connections streams are spread over them.
  'h2-connections': { type: 'string', default: '5' },
  'h2-rounds': { type: 'string', default: '1' },
  // Only the credentials phase: intercepted HTTP/1.1 with credential substitution on and off.
  'credentials-only': { type: 'boolean', default: false },
  // 0 skips the credentials phase.
  'credentials-rounds': { type: 'string', default: '2' },
  // Only the otlp phase: telemetry off, to a live receiver, to a dead endpoint.
  'otlp-only': { type: 'boolean', default: false },
  // 0 skips the otlp phase.
  'otlp-rounds': { type: 'string', default: '2' },
  // Another checkout (built) measured in the same run as `baseline`: before/after one change.
  baseline: { type: 'string' },
  // The `engine` of the trajgate row and of the baseline's (node | lean; default: the config's).
  // `--engine lean --baseline . --baseline-engine node` sets the two engines side by side.
  engine: { type: 'string' },
  'baseline-engine': { type: 'string' },
});
const opt = {
  duration: int('duration'),
  connections: int('connections'),
  threads: int('threads'),
  warmup: int('warmup'),
  tunnelBytes: int('tunnel-mib') * 2 ** 20,
  tunnelRuns: int('tunnel-runs'),
  chainSeconds:
    values['tunnel-only'] || values['h2-only'] || values['credentials-only'] || values['otlp-only']
      ? 0
      : Number(values['chain-seconds']),
  tunnelOnly: values['tunnel-only'],
  h2Connections: int('h2-connections'),
  h2Rounds: int('h2-rounds'),
  credentialsRounds:
    values['tunnel-only'] || values['h2-only'] || values['chain-only'] || values['otlp-only']
      ? 0
      : Number(values['credentials-rounds']),
  otlpRounds:
    values['tunnel-only'] || values['h2-only'] || values['chain-only'] || values['credentials-only']
      ? 0
      : Number(values['otlp-rounds']),
};
if (!Number.isInteger(opt.chainSeconds) || opt.chainSeconds < 0)
  throw new Error('--chain-seconds must be a non-negative integer');
if (!Number.isInteger(opt.credentialsRounds) || opt.credentialsRounds < 0)
  throw new Error('--credentials-rounds must be a non-negative integer');
if (!Number.isInteger(opt.otlpRounds) || opt.otlpRounds < 0)
  throw new Error('--otlp-rounds must be a non-negative integer');
const only = ['chain-only', 'tunnel-only', 'h2-only', 'credentials-only', 'otlp-only'].filter(
  (name) => values[name],
);
if (only.length > 1) throw new Error(`--${only.join(' and --')} exclude each other`);
if (values['chain-only'] && opt.chainSeconds === 0)
  throw new Error('--chain-only needs --chain-seconds above 0');
if (values['credentials-only'] && opt.credentialsRounds === 0)
  throw new Error('--credentials-only needs --credentials-rounds above 0');
if (values['otlp-only'] && opt.otlpRounds === 0)
  throw new Error('--otlp-only needs --otlp-rounds above 0');
if (opt.threads > opt.connections) throw new Error('--threads must not exceed --connections');
if (opt.connections % opt.h2Connections !== 0)
  throw new Error('--connections must be a multiple of --h2-connections (streams per connection)');
if (!values['h2-only'] && !values['credentials-only'] && !which('wrk'))
  throw new Error('wrk is not installed (apt-get install -y wrk)');

const cpuBusyBefore = await busyBefore();
const tmp = runTmp('proxy');

const upstreamChild = start(...pin(0, process.execPath, [join(here, 'upstream.mjs')]));
const upstream = await firstJsonLine(upstreamChild);
const targetUrl = `http://127.0.0.1:${upstream.http}/`;
const wrk = wrkRunner({ here, pin, targetUrl, ...opt });

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

/**
 * Pushes through each tunnel `proxy` offers (CONNECT; SOCKS5 where it listens for it), or
 * directly: `opt.tunnelRuns` pushes each, the kinds alternated push by push so the host's drift
 * hits them alike; the median MB/s of each.
 */
async function tunnels(proxy) {
  const kinds = { tunnel: proxy ? ['--proxy', proxy.port] : [] };
  if (proxy?.socksPort) kinds.socksTunnel = ['--socks', proxy.socksPort];
  const runs = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
  for (let i = 0; i < opt.tunnelRuns; i++) {
    for (const [kind, via] of Object.entries(kinds)) {
      if (runs[kind].error) continue;
      const args = [join(here, 'tunnel-client.mjs'), '--target', `127.0.0.1:${upstream.sink}`];
      args.push('--bytes', `${opt.tunnelBytes}`, '--timeout', '120000');
      if (via.length) args.push(via[0], `127.0.0.1:${via[1]}`);
      const r = await run(...pin(0, process.execPath, args), { timeoutMs: 125_000 });
      if (r.code !== 0) runs[kind] = { error: r.stderr.trim() || `tunnel client exited ${r.code}` };
      else runs[kind].push(JSON.parse(r.stdout).MBps);
    }
  }
  const median = (list) => {
    if (list.error) return list;
    const sorted = [...list].sort((a, b) => a - b);
    return { MBps: sorted[Math.floor(sorted.length / 2)], runs: list };
  };
  return Object.fromEntries(Object.entries(runs).map(([k, list]) => [k, median(list)]));
}

/**
 * Keep-alive HTTP, then a new connection per request, then the tunnel, so the peak RSS read at
 * the end covers all three; for a proxy also the peak after HTTP (the tunnel push often sets the
 * peak), and the share of CPU that other processes took meanwhile.
 */
async function measure(name, proxy) {
  log(
    opt.tunnelOnly
      ? `${name}: measuring (tunnel)`
      : `${name}: measuring (each HTTP mode: warm-up ${opt.warmup} s, ${opt.duration} s wrk; tunnel)`,
  );
  const port = proxy?.port ?? null;
  const groups = proxy ? [upstreamChild.pid, proxy.child.pid] : [upstreamChild.pid];
  const before = cpuSnapshot(groups);
  const failed = await probe(port);
  const result = {};
  const modes = opt.tunnelOnly ? {} : { keepAlive: false, newConnection: true };
  for (const [mode, close] of Object.entries(modes)) {
    if (failed) {
      result[mode] = { error: failed };
      continue;
    }
    await wrk(port, opt.warmup, { close });
    const ticks = proxy ? groupCpuTicks(proxy.child.pid) : 0;
    result[mode] = await wrk(port, opt.duration, { close });
    const { requests } = result[mode];
    // Ticks are 10 ms: over a few seconds of load, within a few percent.
    if (proxy && requests > 0)
      result[mode].cpuUsPerRequest = ((groupCpuTicks(proxy.child.pid) - ticks) * 1e4) / requests;
  }
  if (proxy) result.rssAfterHttp = peakRssMB(proxy.child.pid);
  Object.assign(result, await tunnels(proxy));
  if (proxy) result.rss = peakRssMB(proxy.child.pid);
  result.otherLoad = Number(otherLoad(before, cpuSnapshot(groups)).toFixed(3));
  return result;
}

/**
 * What the journal's hash chain costs, in the same run: trajgate with `journal.chain` on and
 * off, alternated twice (on, off, on, off: drift hits both), HTTP only; the best of each. Each
 * request writes two records (its event and its outcome).
 */
async function chainCost() {
  if (opt.chainSeconds === 0) return { skipped: '--chain-seconds 0' };
  const rps = { on: [], off: [] };
  for (let round = 0; round < 2; round++) {
    for (const chain of [true, false]) {
      const name = `chain-${chain ? 'on' : 'off'}-${round}`;
      log(`trajgate, journal chain ${chain ? 'on' : 'off'}: ${opt.chainSeconds} s wrk`);
      const target = await startTrajgate({ ...ctx, name, chain });
      if (target.skipped) return { skipped: target.skipped };
      try {
        const failed = await probe(target.port);
        if (failed) return { skipped: failed };
        await wrk(target.port, opt.warmup);
        const r = await wrk(target.port, opt.chainSeconds);
        if (r.error || r.non2xx || r.socketErrors)
          return { skipped: r.error ?? `${r.non2xx} non-2xx, ${r.socketErrors} socket errors` };
        rps[chain ? 'on' : 'off'].push(r.rps);
      } finally {
        await stop(target.child, 5000);
      }
    }
  }
  const on = Math.max(...rps.on);
  const off = Math.max(...rps.off);
  const usPerRequest = 1e6 / on - 1e6 / off;
  const writer = await writerChainCost(root);
  return { rps, on, off, usPerRequest, usPerRecord: usPerRequest / 2, ratio: on / off, writer };
}

function chainLine(c) {
  if (!c || c.skipped) return `\njournal chain cost: not measured (${c?.skipped ?? 'no trajgate'})`;
  return (
    `\njournal chain cost (same run, best of 2 × ${opt.chainSeconds} s each): on ${c.on.toFixed(0)} req/s, ` +
    `off ${c.off.toFixed(0)} req/s; on/off ${c.ratio.toFixed(3)}; ` +
    `${c.usPerRequest.toFixed(2)} µs per request = ${c.usPerRecord.toFixed(2)} µs per record (event + outcome)\n` +
    `journal chain cost, writer alone (${c.writer.records.toLocaleString('en')} appends, fastest of ${c.writer.rounds}): ` +
    `${c.writer.usOn.toFixed(2)} µs per record on, ${c.writer.usOff.toFixed(2)} off: ${c.writer.usPerRecord.toFixed(2)} µs per record`
  );
}

const alone =
  values['chain-only'] || values['h2-only'] || values['credentials-only'] || values['otlp-only'];
const results = alone ? {} : { direct: await measure('direct', null) };
const ctx = { here, root, tmp, pin, upstream, force: values.trajgate };
for (const [name, startTarget] of alone
  ? []
  : [
      ['floor', startFloor],
      ['lean-floor', startLeanFloor],
      ['squid', startSquid],
      ['sandbox-runtime', startSandboxRuntime],
      ['trajgate', (c) => startTrajgate({ ...c, socks: true, engine: values.engine })],
      ...(values.baseline === undefined
        ? []
        : [
            [
              'baseline',
              (c) =>
                startTrajgate({
                  ...c,
                  root: resolve(values.baseline),
                  name: 'baseline',
                  engine: values['baseline-engine'],
                }),
            ],
          ]),
    ]) {
  const target = await startTarget(ctx);
  if (target.skipped) {
    log(`${name}: ${target.skipped}`);
    results[name] = { skipped: target.skipped };
    continue;
  }
  try {
    results[name] = await measure(name, target);
    if (target.version) results[name].version = target.version;
  } finally {
    await stop(target.child, 5000); // squid takes ~3 s to shut down even with shutdown_lifetime 0
  }
}
const intercept =
  values['chain-only'] || opt.tunnelOnly || values['credentials-only'] || values['otlp-only']
    ? { skipped: `--${only[0]}` }
    : await intercepted({ here, root, tmp, pin, opt });
const credential =
  opt.credentialsRounds === 0
    ? { skipped: only.length ? `--${only[0]}` : '--credentials-rounds 0' }
    : await credentials({ here, root, tmp, pin, opt });
const telemetry =
  opt.otlpRounds === 0
    ? { skipped: only.length ? `--${only[0]}` : '--otlp-rounds 0' }
    : await otlp({ here, pin, opt, wrk, probe, ctx });
const chain = await chainCost();
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
  sandboxRuntime: results['sandbox-runtime']?.version ?? null,
  pinning: pinned
    ? 'wrk, tunnel client and upstream on core 0 (direct: upstream shares core 0 with wrk); proxy under test on core 1'
    : 'none (fewer than 2 cores or no taskset)',
  cpuBusyBefore: Number(cpuBusyBefore.toFixed(3)),
  tcp: tcpSettings(),
  options: opt,
};
if (values['credentials-only']) {
  log(credentialsLines(credential).join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  const out = join(root, 'bench/out/proxy-credentials.json');
  writeFileSync(out, JSON.stringify({ meta, credentials: credential }, null, 2) + '\n');
  log(`\nwrote bench/out/proxy-credentials.json`);
  process.exit(0);
}
if (values['otlp-only']) {
  log(otlpLines(telemetry).join('\n'));
  mkdirSync(join(root, 'bench/out'), { recursive: true });
  writeFileSync(
    join(root, 'bench/out/proxy-otlp.json'),
    JSON.stringify({ meta, otlp: telemetry }, null, 2) + '\n',
  );
  log(`\nwrote bench/out/proxy-otlp.json`);
  process.exit(0);
}
if (alone) {
  log(values['chain-only'] ? chainLine(chain) : interceptedLines(intercept).join('\n'));
  process.exit(0);
}
const { text, checks } = report(results, meta);
log('\n' + text);
log(interceptedLines(intercept).join('\n'));
log(credentialsLines(credential).join('\n'));
log(otlpLines(telemetry).join('\n'));
log(chainLine(chain));
mkdirSync(join(root, 'bench/out'), { recursive: true });
writeFileSync(
  join(root, 'bench/out/proxy.json'),
  JSON.stringify(
    {
      meta,
      results,
      checks,
      intercepted: intercept,
      credentials: credential,
      otlp: telemetry,
      chain,
    },
    null,
    2,
  ) + '\n',
);
log(`\nwrote bench/out/proxy.json`);
