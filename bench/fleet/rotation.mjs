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
 * Watches the gateway from now on: each rotation as its rotated file appears, and the longest
 * event-loop delay of every `scrapeMs` window. `end()` stops and resolves what was seen:
 * { rotatedAt, windows: [{ from, to, maxMs }] } (times in performance.now() ms).
 */
export function watchRotations(gw, data, scrapeMs = 250) {
  const seen = new Set(readdirSync(data).filter((f) => ROTATED.test(f)));
  const rotatedAt = [];
  const watcher = watch(data, (_type, name) => {
    if (name && ROTATED.test(name) && !seen.has(name)) {
      seen.add(name);
      rotatedAt.push(performance.now());
    }
  });
  const windows = [];
  let ended = false;
  const scraping = (async () => {
    let from = performance.now();
    await gw.call('GET', '/metrics'); // starts the first window
    while (!ended) {
      await sleep(scrapeMs);
      const r = await gw.call('GET', '/metrics');
      const to = performance.now();
      windows.push({ from, to, maxMs: metric(r.text, 'nodejs_eventloop_lag_max_seconds') * 1000 });
      from = to;
    }
  })();
  return {
    rotations: () => rotatedAt.length,
    async end() {
      ended = true;
      await scraping;
      watcher.close();
      return { rotatedAt, windows };
    },
  };
}

/**
 * What `watchRotations` saw, with a probe agent's `samples` (steady()): per rotation the
 * longest event-loop delay of the windows within NEAR_MS of it; the longest near any rotation
 * and away from all; the probe's worst latency near a rotation and away, its p50 and p99.
 */
export function summarize({ rotatedAt, windows }, samples) {
  const near = (from, to, t) => from <= t + NEAR_MS && to >= t - NEAR_MS;
  const nearAny = (from, to) => rotatedAt.some((t) => near(from, to, t));
  const most = (values) => values.reduce((a, b) => Math.max(a, b), 0);
  const lag = (keep) => most(windows.filter(keep).map((w) => w.maxMs));
  const probe = (keep) => most(samples.filter(keep).map((s) => s.ms));
  const ms = samples.map((s) => s.ms);
  return {
    rotations: rotatedAt.length,
    eventLoopMaxMs: {
      perRotation: rotatedAt.map((t) => lag((w) => near(w.from, w.to, t))),
      nearRotation: lag((w) => nearAny(w.from, w.to)),
      away: lag((w) => !nearAny(w.from, w.to)),
      windows: windows.length,
    },
    probe: {
      requests: samples.length,
      failed: samples.filter((s) => s.status !== 200).length,
      firstFailure: samples.find((s) => s.status !== 200) ?? null,
      p50: percentile(ms, 50),
      p99: percentile(ms, 99),
      maxNearRotation: probe((s) => nearAny(s.at, s.at + s.ms)),
      maxAway: probe((s) => !nearAny(s.at, s.at + s.ms)),
    },
  };
}

/** A probe agent: a tiny request every 10 ms from 127.0.0.1 until `stopped()`. */
export const probe = (gw, upstream, stopped) =>
  steady({ proxyPort: gw.proxy, upstream, localAddress: '127.0.0.1', everyMs: 10, stopped });

/**
 * Load through the proxy (16 connections from 127.0.0.2–9) with the probe, until the journal
 * rotated `rotations` times or `maxSeconds` passed; what was seen (summarize()) and the load.
 */
export async function rotations(gw, { data, upstream, rotations: wanted, maxSeconds }) {
  const watching = watchRotations(gw, data);
  const began = performance.now();
  const stopped = () =>
    watching.rotations() >= wanted || performance.now() - began > maxSeconds * 1000;
  const addresses = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
  const [samples, load] = await Promise.all([
    probe(gw, upstream, stopped),
    flood({ proxyPort: gw.proxy, upstream, addresses, connections: 16, stopped }),
  ]);
  const seen = summarize(await watching.end(), samples);
  const seconds = (performance.now() - began) / 1000;
  return { ...seen, seconds, loadRequests: load.requests, loadFailed: load.failed };
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
