// run.mjs's intercepted phase: HTTPS through trajgate with TLS interception, an agent speaking
// HTTP/1.1 against one speaking HTTP/2, in the same run and with the same concurrency. One
// trajgate (its own, with `tls.intercept`: the other rows' trajgate loads no TLS code) in front
// of two loopback HTTPS upstreams (bench/tls/upstream.mjs): one HTTP/1.1 only, one offering h2.
import { join } from 'node:path';
import { log } from '../run-setup.mjs';
import { median } from '../tls/request-loops.mjs';
import { cpuSnapshot, otherLoad, peakRssMB } from './proc-stats.mjs';
import { firstJsonLine, run, start, stop } from './procs.mjs';
import { alignTable, fmt } from './report.mjs';
import { startInterceptingTrajgate } from './targets.mjs';

/**
 * The loads, each `concurrency` requests in flight through the proxy: HTTP/1.1 from undici
 * (one CONNECT + TLS per connection, a request at a time on each), and HTTP/2 from
 * h2-load.mjs (`connections` CONNECT + TLS connections, the streams spread over them), to the
 * HTTP/1.1 upstream and to the h2 one.
 */
const KINDS = {
  h1: { label: 'HTTP/1.1 → HTTP/1.1 upstream', client: '../tls/load.mjs', upstream: 'h1' },
  h2: { label: 'h2 → HTTP/1.1 upstream', client: 'h2-load.mjs', upstream: 'h1' },
  h2h2: { label: 'h2 → h2 upstream', client: 'h2-load.mjs', upstream: 'h2' },
};

/**
 * Runs the phase: `opt.h2Rounds` rounds, the kinds in turn (reversed every other round, so
 * drift hits them alike); per kind the median req/s, p99 and trajgate's CPU per request.
 */
export async function intercepted({ here, root, tmp, pin, opt }) {
  const upstreamJs = join(here, '../tls/upstream.mjs');
  const up = {
    h1: start(...pin(0, process.execPath, [upstreamJs])),
    h2: start(...pin(0, process.execPath, [upstreamJs, '--h2'])),
  };
  const children = [up.h1, up.h2];
  try {
    const ports = {};
    for (const [k, child] of Object.entries(up)) ports[k] = (await firstJsonLine(child)).port;
    const url = (k) => `https://127.0.0.1:${ports[k]}/`;
    const proxy = await startInterceptingTrajgate({
      root,
      tmp,
      pin,
      name: 'trajgate-intercept',
      intercept: Object.values(ports).map((p) => `127.0.0.1:${p}`),
      allow: Object.keys(ports).map((k) => `GET ${url(k)}`),
      ports: Object.values(ports),
    });
    if (proxy.skipped) return { skipped: proxy.skipped };
    children.push(proxy.child);
    log(
      `intercepted: ${opt.connections} requests in flight (h2: ${opt.h2Connections} connections × ` +
        `${opt.connections / opt.h2Connections} streams), ${opt.h2Rounds} round(s) of ` +
        `${opt.warmup} s warm-up + ${opt.duration} s per kind`,
    );
    const clientArgs = (kind) => {
      const { client, upstream } = KINDS[kind];
      const args = [join(here, client), '--target', url(upstream), '--ca', proxy.ca];
      args.push('--proxy', `http://127.0.0.1:${proxy.port}`);
      if (client !== 'h2-load.mjs') return [...args, '--connections', `${opt.connections}`];
      const streams = opt.connections / opt.h2Connections;
      return [...args, '--connections', `${opt.h2Connections}`, '--streams', `${streams}`];
    };
    const runs = Object.fromEntries(Object.keys(KINDS).map((k) => [k, []]));
    for (const kind of Object.keys(KINDS)) {
      const probe = await run(...pin(0, process.execPath, [...clientArgs(kind), '--probe']), {
        timeoutMs: 15_000,
      });
      const probed = JSON.parse(probe.stdout.trim().split('\n').pop() || '{}');
      if (probed.status !== 200)
        runs[kind] = { error: `probe: ${JSON.stringify(probed)} ${probe.stderr.trim()}`.trim() };
    }
    for (let round = 0; round < opt.h2Rounds; round++) {
      const order = Object.keys(KINDS);
      for (const kind of round % 2 === 0 ? order : order.reverse()) {
        if (runs[kind].error) continue;
        const args = [...clientArgs(kind), '--duration', `${opt.duration}`];
        args.push('--warmup', `${opt.warmup}`, '--cpu-pid', `${proxy.child.pid}`);
        const groups = children.map((child) => child.pid);
        const before = cpuSnapshot(groups);
        const r = await run(...pin(0, process.execPath, args), {
          timeoutMs: (opt.duration + opt.warmup + 30) * 1000,
        });
        if (r.code !== 0) {
          runs[kind] = { error: `load client exited ${r.code}: ${r.stderr.trim()}` };
          continue;
        }
        const result = JSON.parse(r.stdout.trim().split('\n').pop());
        result.otherLoad = otherLoad(before, cpuSnapshot(groups));
        runs[kind].push(result);
        log(
          `  ${KINDS[kind].label}: ${Math.round(result.rps)} req/s, p99 ` +
            `${result.p99?.toFixed(2)} ms, trajgate ${result.proxyCpuUsPerRequest?.toFixed(0)} µs ` +
            `CPU/request, client ${(result.clientCpu * 100).toFixed(0)}% of a core`,
        );
      }
    }
    const rows = Object.fromEntries(Object.entries(runs).map(([k, list]) => [k, summary(list)]));
    return { rows, ratios: ratios(rows), peakRssMB: peakRssMB(proxy.child.pid)?.mb ?? null };
  } finally {
    for (const child of children.reverse()) await stop(child);
  }
}

/** A kind's figures over its rounds; unusable (null figures) if any round had errors. */
function summary(list) {
  if (list.error) return { error: list.error };
  const flawed = list.find((r) => r.errors || r.non2xx || r.requests === 0);
  if (flawed)
    return {
      error: `${flawed.errors} errors (${flawed.errorSample}), ${flawed.non2xx} non-2xx`,
      runs: list,
    };
  const of = (key) => median(list.map((r) => r[key]).filter((v) => v != null));
  return {
    rps: of('rps'),
    p50: of('p50'),
    p99: of('p99'),
    proxyCpuUsPerRequest: of('proxyCpuUsPerRequest'),
    clientCpu: of('clientCpu'),
    otherLoad: of('otherLoad'),
    runs: list,
  };
}

function ratios({ h1, h2, h2h2 }) {
  const r = (a, b, key) => (a?.[key] == null || b?.[key] == null ? null : a[key] / b[key]);
  return {
    'h2/HTTP/1.1 req/s': r(h2, h1, 'rps'),
    'h2/HTTP/1.1 p99': r(h2, h1, 'p99'),
    'h2/HTTP/1.1 trajgate CPU per request': r(h2, h1, 'proxyCpuUsPerRequest'),
    'h2 (h2 upstream)/HTTP/1.1 req/s': r(h2h2, h1, 'rps'),
    'h2 (h2 upstream)/h2 (HTTP/1.1 upstream) req/s': r(h2h2, h2, 'rps'),
  };
}

/** The phase's printed table and ratios. */
export function interceptedLines(result) {
  if (result.skipped) return [`intercepted: not measured (${result.skipped})`];
  const head = ['intercepted (agent → upstream)', 'req/s', 'p50 ms', 'p99 ms'];
  const rows = [[...head, 'trajgate µs CPU/req', 'client CPU', 'notes']];
  for (const [kind, x] of Object.entries(result.rows)) {
    const client = x.clientCpu == null ? '-' : `${(x.clientCpu * 100).toFixed(0)}%`;
    const cells = [fmt(x.rps, 0), fmt(x.p50, 2), fmt(x.p99, 2), fmt(x.proxyCpuUsPerRequest, 0)];
    const load = x.otherLoad > 0.05 ? `other load took ${(x.otherLoad * 100).toFixed(0)}% CPU` : '';
    rows.push([KINDS[kind].label, ...cells, client, x.error ?? load]);
  }
  const rss = `trajgate (intercepting) peak RSS: ${fmt(result.peakRssMB, 1)} MB`;
  const lines = Object.entries(result.ratios).map(
    ([name, v]) => `  ${name.padEnd(46)}${fmt(v, 2).padStart(8)}   info`,
  );
  return ['', ...alignTable(rows), rss, 'intercepted ratios (same run):', ...lines];
}
