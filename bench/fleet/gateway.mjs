// The gateway of the fleet bench: `trajgate start --config …` as users run it (the package's
// bin with its `#!` line's Node flags) on core 1, no `agents` (sessions by client address), a
// journal that rotates, the upstream allowlisted on loopback. Started again on the same files
// for the restart figure.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { admin } from '../review/clients.mjs';
import { printed, sleep, start, stop } from '../proxy/procs.mjs';
import { launcherFlags } from '../proxy/targets.mjs';
import { pin } from '../run-setup.mjs';

export const ADMIN_TOKEN = 'fleet-bench-admin-token-0123456789';

/** Writes `dir`/trajgate.yaml; returns its path and the journal's folder. */
export function writeConfig(dir, { upstream, rotate, keep }) {
  mkdirSync(join(dir, 'workspace'), { recursive: true });
  const file = join(dir, 'trajgate.yaml');
  const data = join(dir, 'data');
  const lines = [
    'version: 1',
    `workspace: ${dir}/workspace`,
    // keep alone (keepFor 0ms), so the files on disk are those the deploy guide's sizing counts.
    `journal: { path: ${data}/journal.jsonl, rotate: ${rotate}, keep: ${keep}, keepFor: 0ms }`,
    'listen: { proxy: 127.0.0.1:0, admin: 127.0.0.1:0, bridge: 127.0.0.1:0 }',
    'network:',
    `  allow: ["127.0.0.1:${upstream}"]`,
    '  allowPrivate: ["127.0.0.1/32"]',
    `admin: { token: ${ADMIN_TOKEN} }`,
  ];
  writeFileSync(file, lines.join('\n') + '\n');
  return { file, data };
}

/**
 * Starts the gateway on `file` pinned to core 1 and waits until `GET /api/health` answers 200.
 * Resolves { child, pid, proxy, adminPort, call, readyMs }: `readyMs` from spawn to that answer,
 * `call` a JSON client of its admin API.
 */
export async function launch(main, file, cwd, timeoutMs = 300_000) {
  const began = performance.now();
  const args = [...launcherFlags(main), main, 'start', '--config', file];
  const child = start(...pin(1, process.execPath, args), { cwd });
  const said = (re) => printed(child, re, timeoutMs);
  const page = await said(/review page on http:\/\/127\.0\.0\.1:(\d+)/);
  const proxy = await said(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)/);
  if (page.why !== undefined || proxy.why !== undefined) {
    await stop(child);
    throw new Error(`trajgate did not start: ${page.why ?? proxy.why}`);
  }
  const adminPort = Number(page.match[1]);
  const client = admin(adminPort, ADMIN_TOKEN);
  // A keep-alive connection the server closed as it was reused resets; a GET may be sent again
  // on a new one (RFC 9112 § 9.3.1).
  const call = (method, path) =>
    client(method, path).catch((err) => {
      if (method !== 'GET' || err.code !== 'ECONNRESET') throw err;
      return client(method, path);
    });
  for (const deadline = began + timeoutMs; ; await sleep(5)) {
    const r = await call('GET', '/api/health').catch((err) => ({ status: err.message }));
    if (r.status === 200) break;
    if (performance.now() > deadline)
      throw new Error(`/api/health never answered 200: ${r.status}`);
  }
  const readyMs = performance.now() - began;
  // taskset runs trajgate with exec, so the child's pid is the gateway's.
  return { child, pid: child.pid, proxy: Number(proxy.match[1]), adminPort, call, readyMs };
}

/** SIGTERM; resolves the ms until the gateway exited and its exit status. */
export async function shutdown(gw, graceMs = 120_000) {
  const began = performance.now();
  await stop(gw.child, graceMs);
  return { ms: performance.now() - began, code: await gw.child.exited };
}

/** GET `path` `n` times one after the other; the latencies in ms (a non-200 throws). */
export async function timedCalls(call, path, n) {
  const times = [];
  let last;
  for (let i = 0; i < n; i++) {
    const began = performance.now();
    last = await call('GET', path);
    times.push(performance.now() - began);
    if (last.status !== 200) throw new Error(`GET ${path}: ${last.status} ${last.text}`);
  }
  return { times, last: last.json };
}

/** The value of a metric without labels in `/metrics` text, or null. */
export function metric(text, name) {
  const m = new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * Major garbage collections in `/metrics` (prom-client's `nodejs_gc_duration_seconds`, kind
 * major): how many, their seconds in all, and how many took over 0.1 s and over 1 s (buckets).
 */
export function majorGc(text) {
  const series = {};
  const re = /^nodejs_gc_duration_seconds_(bucket|sum|count)\{([^}]*)\} ([0-9.e+-]+)$/gm;
  for (const [, part, labels, value] of text.matchAll(re)) {
    if (!labels.includes('kind="major"')) continue;
    const le = /le="([^"]+)"/.exec(labels)?.[1];
    series[le === undefined ? part : le] = Number(value);
  }
  const count = series.count ?? 0;
  return {
    count,
    seconds: series.sum ?? 0,
    over100ms: count - (series['0.1'] ?? count),
    over1s: count - (series['1'] ?? count),
  };
}
