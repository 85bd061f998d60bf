// run.mjs's intercepted phase: HTTPS through trajgate with TLS interception, an agent speaking
// HTTP/1.1 against one speaking HTTP/2, in the same run and with the same concurrency. One
// trajgate (its own, with `tls.intercept`: the other rows' trajgate loads no TLS code) in front
// of two loopback HTTPS upstreams (bench/tls/upstream.mjs): one HTTP/1.1 only, one offering h2.
import { join } from 'node:path';
import { log } from '../run-setup.mjs';
import { peakRssMB } from './proc-stats.mjs';
import { firstJsonLine, start, stop } from './procs.mjs';
import { fmt } from './report.mjs';
import { alternate, probeOnce, ratio, roundsLines } from './rounds.mjs';
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
    const kinds = {};
    for (const [kind, { label }] of Object.entries(KINDS)) {
      const args = clientArgs(kind);
      const probed = await probeOnce(pin, args);
      const error = probed.status === 200 ? undefined : `probe: ${JSON.stringify(probed)}`;
      kinds[kind] = { label, args, cpuPid: proxy.child.pid, error };
    }
    const groups = children.map((child) => child.pid);
    const rows = await alternate({ kinds, rounds: opt.h2Rounds, pin, opt, groups });
    return { rows, ratios: ratios(rows), peakRssMB: peakRssMB(proxy.child.pid)?.mb ?? null };
  } finally {
    for (const child of children.reverse()) await stop(child);
  }
}

function ratios({ h1, h2, h2h2 }) {
  return {
    'h2/HTTP/1.1 req/s': ratio(h2, h1, 'rps'),
    'h2/HTTP/1.1 p99': ratio(h2, h1, 'p99'),
    'h2/HTTP/1.1 trajgate CPU per request': ratio(h2, h1, 'proxyCpuUsPerRequest'),
    'h2 (h2 upstream)/HTTP/1.1 req/s': ratio(h2h2, h1, 'rps'),
    'h2 (h2 upstream)/h2 (HTTP/1.1 upstream) req/s': ratio(h2h2, h2, 'rps'),
  };
}

/** The phase's printed table and ratios. */
export function interceptedLines(result) {
  if (result.skipped) return [`intercepted: not measured (${result.skipped})`];
  const labels = Object.fromEntries(Object.entries(KINDS).map(([k, { label }]) => [k, label]));
  const title = 'intercepted (agent → upstream)';
  const lines = roundsLines(title, labels, result.rows, result.ratios);
  const rss = `trajgate (intercepting) peak RSS: ${fmt(result.peakRssMB, 1)} MB`;
  return ['', ...lines.table, rss, 'intercepted ratios (same run):', ...lines.ratios];
}
