#!/usr/bin/env node
// trajgate against another checkout's, alternated: keep-alive req/s and p99 (wrk) for each,
// rounds in the order A B B A … so drift on the host hits both alike; the median of each.
// Usage: node bench/proxy/ab.mjs --baseline DIR [--rounds 4] [--duration 8] [--warmup 2]
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, log, pin, runTmp } from '../run-setup.mjs';
import { firstJsonLine, start, stop } from './procs.mjs';
import { cpuTicks } from './proc-stats.mjs';
import { startTrajgate } from './targets.mjs';
import { wrkRunner } from './wrk.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const { values, int } = benchArgs({
  threads: { type: 'string', default: '1' },
  rounds: { type: 'string', default: '4' },
  baseline: { type: 'string' },
});
if (values.baseline === undefined) throw new Error('--baseline DIR is needed (a built checkout)');
const opt = { duration: int('duration'), warmup: int('warmup'), rounds: int('rounds') };
const tmp = runTmp('proxy-ab');
const upstreamChild = start(...pin(0, process.execPath, [join(here, 'upstream.mjs')]));
const upstream = await firstJsonLine(upstreamChild);
const wrk = wrkRunner({
  here,
  pin,
  targetUrl: `http://127.0.0.1:${upstream.http}/`,
  threads: int('threads'),
  connections: int('connections'),
});
const sides = { trajgate: root, baseline: resolve(values.baseline) };
const figures = { trajgate: [], baseline: [] };
try {
  for (let round = 0; round < opt.rounds; round++) {
    const order = round % 2 === 0 ? ['trajgate', 'baseline'] : ['baseline', 'trajgate'];
    for (const name of order) {
      const target = await startTrajgate({
        root: sides[name],
        tmp,
        pin,
        upstream,
        name: `${name}-${round}`,
      });
      if (target.skipped) throw new Error(`${name}: ${target.skipped}`);
      try {
        await wrk(target.port, opt.warmup);
        const before = cpuTicks(target.child.pid);
        const r = await wrk(target.port, opt.duration);
        if (r.error) throw new Error(`${name}: ${r.error}`);
        // The proxy's own CPU per request: what the host's other load blurs least.
        const usPerRequest = ((cpuTicks(target.child.pid) - before) * 1e4) / r.requests;
        figures[name].push({ ...r, usPerRequest });
        log(
          `round ${round + 1} ${name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99ms.toFixed(2)} ms, ` +
            `${usPerRequest.toFixed(1)} µs CPU/request`,
        );
      } finally {
        await stop(target.child);
      }
    }
  }
} finally {
  await stop(upstreamChild);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const of = (name, key) => median(figures[name].map((r) => r[key]));
log(
  `median keep-alive req/s: trajgate ${of('trajgate', 'rps').toFixed(0)}, baseline ${of('baseline', 'rps').toFixed(0)}, ratio ${(of('trajgate', 'rps') / of('baseline', 'rps')).toFixed(2)}`,
);
log(
  `median keep-alive p99 ms: trajgate ${of('trajgate', 'p99ms').toFixed(2)}, baseline ${of('baseline', 'p99ms').toFixed(2)}, ratio ${(of('trajgate', 'p99ms') / of('baseline', 'p99ms')).toFixed(2)}`,
);
log(
  `median CPU µs/request: trajgate ${of('trajgate', 'usPerRequest').toFixed(1)}, baseline ${of('baseline', 'usPerRequest').toFixed(1)}, ratio ${(of('trajgate', 'usPerRequest') / of('baseline', 'usPerRequest')).toFixed(2)}`,
);
