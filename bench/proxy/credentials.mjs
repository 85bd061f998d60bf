// run.mjs's credentials phase: what swapping a credential's sentinel for its value costs on
// intercepted HTTP/1.1, in the same run. Two trajgates started alike (`trajgate start --config`,
// `tls.intercept` on the same two loopback upstreams), identical but for a `credentials:` entry
// in one (for upstream `on`); the load sends `Authorization: Bearer SENTINEL` through both.
// Upstream `on` answers 401 unless it gets the real value, `off` unless it gets the sentinel, so
// every counted request is checked (a non-2xx makes its row unusable).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { log } from '../run-setup.mjs';
import { peakRssMB } from './proc-stats.mjs';
import { firstJsonLine, start, stop } from './procs.mjs';
import { fmt } from './report.mjs';
import { alternate, probeOnce, ratio, roundsLines } from './rounds.mjs';
import { startInterceptingTrajgate } from './targets.mjs';

const SENTINEL = 'tgs_bench_0123456789abcdef';
/** The variable the value comes from, as a user's config would read it. */
const VALUE_ENV = 'TRAJGATE_BENCH_CREDENTIAL';
const LABELS = { on: 'substitution on', off: 'substitution off' };

/**
 * Runs the phase: `opt.credentialsRounds` rounds, on then off (reversed every other round);
 * per row the median req/s, p50/p99 and trajgate's CPU per request, and the on/off ratios.
 */
export async function credentials({ here, root, tmp, pin, opt }) {
  const value = `bench_value_${randomBytes(16).toString('hex')}`;
  const upstreamJs = join(here, '../tls/upstream.mjs');
  const expect = { on: `Bearer ${value}`, off: `Bearer ${SENTINEL}` };
  const up = Object.fromEntries(
    Object.entries(expect).map(([k, auth]) => [
      k,
      start(...pin(0, process.execPath, [upstreamJs, '--expect-auth', auth])),
    ]),
  );
  const children = Object.values(up);
  try {
    const ports = {};
    for (const [k, child] of Object.entries(up)) ports[k] = (await firstJsonLine(child)).port;
    const url = (k) => `https://127.0.0.1:${ports[k]}/`;
    const alike = {
      root,
      tmp,
      pin,
      intercept: Object.values(ports).map((p) => `127.0.0.1:${p}`),
      allow: Object.keys(ports).map((k) => `GET ${url(k)}`),
      ports: Object.values(ports),
      env: { [VALUE_ENV]: value },
    };
    const lines = {
      on: [
        'credentials:',
        '  - name: bench',
        `    value: \${${VALUE_ENV}}`,
        `    sentinel: ${SENTINEL}`,
        `    hosts: ["127.0.0.1:${ports.on}"]`,
        '    scheme: Bearer',
      ],
      off: [],
    };
    const proxies = {};
    for (const k of Object.keys(LABELS)) {
      const name = `trajgate-credentials-${k}`;
      proxies[k] = await startInterceptingTrajgate({ ...alike, name, lines: lines[k] });
      if (proxies[k].skipped) return { skipped: `${name}: ${proxies[k].skipped}` };
      children.push(proxies[k].child);
    }
    const args = (proxy, upstream) => [
      join(here, '../tls/load.mjs'),
      ...['--target', url(upstream), '--ca', proxy.ca],
      ...['--proxy', `http://127.0.0.1:${proxy.port}`, '--connections', `${opt.connections}`],
      ...['--header', `Authorization: Bearer ${SENTINEL}`],
    ];
    // 200 from `on` through the trajgate with the entry: it got the value; 200 from `off`
    // without: it got the sentinel; 401 from `on` without: the check tells them apart.
    const verified = {
      on: (await probeOnce(pin, args(proxies.on, 'on'))).status,
      off: (await probeOnce(pin, args(proxies.off, 'off'))).status,
      sentinelAtOn: (await probeOnce(pin, args(proxies.off, 'on'))).status,
    };
    if (verified.on !== 200 || verified.off !== 200 || verified.sentinelAtOn !== 401)
      return { skipped: `probe: upstreams answered ${JSON.stringify(verified)}`, verified };
    log(
      `credentials: ${opt.connections} requests in flight, HTTP/1.1, ${opt.credentialsRounds} ` +
        `round(s) of ${opt.warmup} s warm-up + ${opt.duration} s per row; upstreams got the ` +
        `value (on) and the sentinel (off)`,
    );
    const kinds = Object.fromEntries(
      Object.entries(LABELS).map(([k, label]) => [
        k,
        { label, args: args(proxies[k], k), cpuPid: proxies[k].child.pid },
      ]),
    );
    const groups = children.map((child) => child.pid);
    const rows = await alternate({ kinds, rounds: opt.credentialsRounds, pin, opt, groups });
    const rss = Object.fromEntries(
      Object.entries(proxies).map(([k, p]) => [k, peakRssMB(p.child.pid)?.mb ?? null]),
    );
    return { verified, rows, ratios: ratios(rows), peakRssMB: rss };
  } finally {
    for (const child of children.reverse()) await stop(child);
  }
}

function ratios({ on, off }) {
  return {
    'substitution on/off req/s': ratio(on, off, 'rps'),
    'substitution on/off p99': ratio(on, off, 'p99'),
    'substitution on/off CPU per request': ratio(on, off, 'proxyCpuUsPerRequest'),
  };
}

/** The phase's printed table and ratios. */
export function credentialsLines(result) {
  if (result.skipped) return [`credentials: not measured (${result.skipped})`];
  const title = 'intercepted HTTP/1.1, Bearer sentinel';
  const lines = roundsLines(title, LABELS, result.rows, result.ratios);
  const { on, off } = result.peakRssMB;
  const rss = `trajgate peak RSS: substitution on ${fmt(on, 1)} MB, off ${fmt(off, 1)} MB`;
  return ['', ...lines.table, rss, 'credentials ratios (same run):', ...lines.ratios];
}
