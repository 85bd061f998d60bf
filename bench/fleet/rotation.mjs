// Rotations under a fleet's state: load through the proxy until the journal has rotated
// `rotations` times, while a probe agent sends a tiny request every 10 ms and `/metrics` is read
// every `scrapeMs` (`nodejs_eventloop_lag_max_seconds`: the gateway's longest event-loop delay
// since the previous read, from perf_hooks.monitorEventLoopDelay). Each rotation is seen as its
// rotated file appears (inotify on the journal's folder).
import { createReadStream, readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sleep } from '../proxy/procs.mjs';
import { flood, percentile, steady } from './client.mjs';
import { metric } from './gateway.mjs';

const ROTATED = /^journal\.\d{6,}\.jsonl$/;
/** How near a rotation (ms either side of its file's appearance) a window or sample counts. */
const NEAR_MS = 1000;

/**
 * Runs the phase; resolves the rotations seen, the probe's latencies and the event-loop delay,
 * each split into near a rotation and away from one, and the load it took.
 */
export async function rotations(gw, { data, upstream, rotations: wanted, maxSeconds, scrapeMs }) {
  const seen = new Set(readdirSync(data).filter((f) => ROTATED.test(f)));
  const rotatedAt = [];
  const watcher = watch(data, (_type, name) => {
    if (name && ROTATED.test(name) && !seen.has(name)) {
      seen.add(name);
      rotatedAt.push(performance.now());
    }
  });
  const began = performance.now();
  const stopped = () => rotatedAt.length >= wanted || performance.now() - began > maxSeconds * 1000;
  const windows = [];
  const scrape = async () => {
    let from = performance.now();
    await gw.call('GET', '/metrics'); // starts the first window
    while (!stopped()) {
      await sleep(scrapeMs);
      const r = await gw.call('GET', '/metrics');
      const to = performance.now();
      windows.push({ from, to, maxMs: metric(r.text, 'nodejs_eventloop_lag_max_seconds') * 1000 });
      from = to;
    }
  };
  const addresses = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
  const [probe, load] = await Promise.all([
    steady({ proxyPort: gw.proxy, upstream, localAddress: '127.0.0.1', everyMs: 10, stopped }),
    flood({ proxyPort: gw.proxy, upstream, addresses, connections: 16, stopped }),
    scrape(),
  ]);
  watcher.close();
  const seconds = (performance.now() - began) / 1000;
  const near = (from, to) => rotatedAt.some((t) => from <= t + NEAR_MS && to >= t - NEAR_MS);
  const split = (items, isNear, value) => {
    const close = items.filter(isNear).map(value);
    const away = items.filter((x) => !isNear(x)).map(value);
    return { near: Math.max(0, ...close), away: Math.max(0, ...away) };
  };
  const lag = split(
    windows,
    (w) => near(w.from, w.to),
    (w) => w.maxMs,
  );
  const probeWorst = split(
    probe,
    (s) => near(s.at, s.at + s.ms),
    (s) => s.ms,
  );
  const probeMs = probe.map((s) => s.ms);
  return {
    rotations: rotatedAt.length,
    seconds,
    loadRequests: load.requests,
    loadFailed: load.failed,
    probe: {
      requests: probe.length,
      failed: probe.filter((s) => s.status !== 200).length,
      p50: percentile(probeMs, 50),
      p99: percentile(probeMs, 99),
      maxNearRotation: probeWorst.near,
      maxAway: probeWorst.away,
    },
    eventLoopMaxMs: { nearRotation: lag.near, away: lag.away, windows: windows.length },
  };
}

/**
 * The live file's leading snapshot lines (type `snapshot`, or `snapshot-part`s then a
 * `snapshot` head): their bytes and count, read up to the first other record.
 */
export async function snapshotSize(data) {
  const lines = createInterface({ input: createReadStream(join(data, 'journal.jsonl')) });
  let bytes = 0;
  let count = 0;
  for await (const line of lines) {
    const type = /"type":"([^"]*)"/.exec(line.slice(0, 400))?.[1] ?? '';
    if (!type.startsWith('snapshot')) break;
    bytes += Buffer.byteLength(line) + 1;
    count++;
  }
  lines.close();
  return { bytes, lines: count };
}

/** The journal's files: how many, their bytes, the largest one. */
export function journalFiles(data) {
  const sizes = readdirSync(data)
    .filter((f) => f === 'journal.jsonl' || ROTATED.test(f))
    .map((f) => statSync(join(data, f)).size);
  return {
    files: sizes.length,
    bytes: sizes.reduce((a, b) => a + b, 0),
    largest: Math.max(0, ...sizes),
  };
}
