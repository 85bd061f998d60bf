// run.mjs's otlp phase: what telemetry.otlp costs the proxy, in the same run. Three trajgates
// started alike (`trajgate start --config`, the same upstream), identical but for telemetry:
// none, to a live local OTLP/HTTP receiver (otlp-receiver.mjs), and to a dead endpoint (a
// loopback port that refuses). wrk over keep-alive connections, kind after kind for some rounds
// (the order reversed every other round); per kind the median req/s and p99, and the ratios.
import http from 'node:http';
import { join } from 'node:path';
import { log } from '../run-setup.mjs';
import { cpuSnapshot, cpuTicks, otherLoad } from './proc-stats.mjs';
import { firstJsonLine, start, stop } from './procs.mjs';
import { alignTable, fmt } from './report.mjs';
import { median } from '../tls/request-loops.mjs';
import { startTrajgate } from './targets.mjs';

const LABELS = { off: 'telemetry off', live: 'to a live receiver', dead: 'to a dead endpoint' };

/** A loopback port nothing listens on (listened on, then closed). */
function refusedPort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const getJson = (url) =>
  new Promise((resolve, reject) =>
    http
      .get(url, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(JSON.parse(text)));
      })
      .on('error', reject),
  );

const endpointLines = (endpoint) => ['telemetry:', '  otlp:', `    endpoint: ${endpoint}`];

/**
 * Runs the phase with run.mjs's context (`wrk`, `probe`, `ctx` for startTrajgate) for
 * `opt.otlpRounds` rounds. Resolves { rows, ratios, received } or { skipped }.
 */
export async function otlp({ here, pin, opt, wrk, probe, ctx }) {
  const receiver = start(...pin(0, process.execPath, [join(here, 'otlp-receiver.mjs')]));
  const children = [receiver];
  try {
    const { port } = await firstJsonLine(receiver);
    const endpoints = {
      live: `http://127.0.0.1:${port}`,
      dead: `http://127.0.0.1:${await refusedPort()}`,
    };
    const proxies = {};
    for (const k of Object.keys(LABELS)) {
      const lines = k === 'off' ? [] : endpointLines(endpoints[k]);
      proxies[k] = await startTrajgate({ ...ctx, name: `trajgate-otlp-${k}`, lines });
      if (proxies[k].skipped) return { skipped: `trajgate-otlp-${k}: ${proxies[k].skipped}` };
      children.push(proxies[k].child);
      const failed = await probe(proxies[k].port);
      if (failed) return { skipped: `trajgate-otlp-${k}: ${failed}` };
    }
    log(
      `otlp: ${opt.connections} keep-alive connections, ${opt.otlpRounds} round(s) of ` +
        `${opt.warmup} s warm-up + ${opt.duration} s per row`,
    );
    const runs = { off: [], live: [], dead: [] };
    const groups = children.map((c) => c.pid);
    for (let round = 0; round < opt.otlpRounds; round++) {
      const order = Object.keys(LABELS);
      for (const k of round % 2 === 0 ? order : order.reverse()) {
        await wrk(proxies[k].port, opt.warmup);
        const before = cpuSnapshot(groups);
        const ticks = cpuTicks(proxies[k].child.pid);
        const r = await wrk(proxies[k].port, opt.duration);
        if (r.error || r.non2xx || r.socketErrors)
          return {
            skipped: `${LABELS[k]}: ${r.error ?? `${r.non2xx} non-2xx, ${r.socketErrors} socket errors`}`,
          };
        r.otherLoad = otherLoad(before, cpuSnapshot(groups));
        // The proxy's own CPU per request: what the host's other load blurs least.
        r.cpuUs = ((cpuTicks(proxies[k].child.pid) - ticks) * 1e4) / r.requests;
        runs[k].push(r);
        log(
          `  ${LABELS[k]}: ${Math.round(r.rps)} req/s, p99 ${r.p99ms.toFixed(2)} ms, ` +
            `${r.cpuUs.toFixed(0)} µs CPU/request`,
        );
      }
    }
    const rows = Object.fromEntries(
      Object.entries(runs).map(([k, list]) => [
        k,
        {
          rps: median(list.map((r) => r.rps)),
          p99: median(list.map((r) => r.p99ms)),
          cpuUs: median(list.map((r) => r.cpuUs)),
          otherLoad: median(list.map((r) => r.otherLoad)),
          runs: list,
        },
      ]),
    );
    const ratios = {
      'live/off req/s': rows.live.rps / rows.off.rps,
      'dead/off req/s': rows.dead.rps / rows.off.rps,
      'live/off p99': rows.live.p99 / rows.off.p99,
      'dead/off p99': rows.dead.p99 / rows.off.p99,
      'live/off CPU per request': rows.live.cpuUs / rows.off.cpuUs,
      'dead/off CPU per request': rows.dead.cpuUs / rows.off.cpuUs,
    };
    return { rows, ratios, received: await getJson(`${endpoints.live}/counts`) };
  } finally {
    for (const child of children.reverse()) await stop(child, 5000);
  }
}

/** The phase's printed table and ratios. */
export function otlpLines(result) {
  if (result.skipped) return [`otlp: not measured (${result.skipped})`];
  const table = [
    ['telemetry.otlp, keep-alive HTTP', 'req/s', 'p99 ms', 'trajgate µs CPU/req', 'notes'],
  ];
  for (const [k, x] of Object.entries(result.rows)) {
    const load = x.otherLoad > 0.05 ? `other load took ${(x.otherLoad * 100).toFixed(0)}% CPU` : '';
    table.push([LABELS[k], fmt(x.rps, 0), fmt(x.p99, 2), fmt(x.cpuUs, 0), load]);
  }
  const got = Object.entries(result.received)
    .map(([path, c]) => `${path}: ${c.requests} exports, ${(c.bytes / 2 ** 20).toFixed(1)} MiB`)
    .join('; ');
  return [
    '',
    ...alignTable(table),
    `live receiver got ${got || 'nothing'}`,
    'otlp ratios (same run):',
    ...Object.entries(result.ratios).map(
      ([name, v]) => `  ${name.padEnd(46)}${fmt(v, 3).padStart(8)}   info`,
    ),
  ];
}
