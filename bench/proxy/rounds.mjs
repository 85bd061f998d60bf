// What run.mjs's intercepted phases share (intercepted.mjs: HTTP/1.1 against HTTP/2;
// credentials.mjs: substitution on against off): load clients probed once, then run kind after
// kind for some rounds, the order reversed every other round so the host's drift hits every kind
// alike; per kind the medians of its rounds, printed as one table.
import { log } from '../run-setup.mjs';
import { median } from '../tls/request-loops.mjs';
import { cpuSnapshot, otherLoad } from './proc-stats.mjs';
import { run } from './procs.mjs';
import { alignTable, fmt } from './report.mjs';

/** One request by a load client (`args`: its script and options): {status} or {error}. */
export async function probeOnce(pin, args) {
  const r = await run(...pin(0, process.execPath, [...args, '--probe']), { timeoutMs: 15_000 });
  const answer = JSON.parse(r.stdout.trim().split('\n').pop() || '{}');
  return r.stderr.trim() ? { ...answer, stderr: r.stderr.trim() } : answer;
}

/**
 * Runs `kinds` ({ key: { label, args, cpuPid, error? } }: a load client's script and options,
 * the trajgate whose CPU per request it reads; a kind with `error` is not run) for `rounds`
 * rounds of `opt.warmup` + `opt.duration` seconds. `groups`: the process groups that are the
 * bench's own (the rest of the host's CPU use is `otherLoad`). Resolves { key: summary }.
 */
export async function alternate({ kinds, rounds, pin, opt, groups }) {
  const runs = Object.fromEntries(
    Object.entries(kinds).map(([k, { error }]) => [k, error ? { error } : []]),
  );
  for (let round = 0; round < rounds; round++) {
    const order = Object.keys(kinds);
    for (const kind of round % 2 === 0 ? order : order.reverse()) {
      if (runs[kind].error) continue;
      const { label, args, cpuPid } = kinds[kind];
      const timed = [...args, '--duration', `${opt.duration}`, '--warmup', `${opt.warmup}`];
      const before = cpuSnapshot(groups);
      const r = await run(...pin(0, process.execPath, [...timed, '--cpu-pid', `${cpuPid}`]), {
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
        `  ${label}: ${Math.round(result.rps)} req/s, p99 ${result.p99?.toFixed(2)} ms, ` +
          `trajgate ${result.proxyCpuUsPerRequest?.toFixed(0)} µs CPU/request, ` +
          `client ${(result.clientCpu * 100).toFixed(0)}% of a core`,
      );
    }
  }
  return Object.fromEntries(Object.entries(runs).map(([k, list]) => [k, summary(list)]));
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

/** `a[key] / b[key]`, or null where either is missing. */
export const ratio = (a, b, key) => (a?.[key] == null || b?.[key] == null ? null : a[key] / b[key]);

/**
 * A phase's printed table (`title` heads the first column, `labels` names each row of `rows`)
 * and its ratios (context: no target).
 */
export function roundsLines(title, labels, rows, ratios) {
  const head = [title, 'req/s', 'p50 ms', 'p99 ms', 'trajgate µs CPU/req', 'client CPU', 'notes'];
  const table = [head];
  for (const [kind, x] of Object.entries(rows)) {
    const client = x.clientCpu == null ? '-' : `${(x.clientCpu * 100).toFixed(0)}%`;
    const cells = [fmt(x.rps, 0), fmt(x.p50, 2), fmt(x.p99, 2), fmt(x.proxyCpuUsPerRequest, 0)];
    const load = x.otherLoad > 0.05 ? `other load took ${(x.otherLoad * 100).toFixed(0)}% CPU` : '';
    table.push([labels[kind], ...cells, client, x.error ?? load]);
  }
  const lines = Object.entries(ratios).map(
    ([name, v]) => `  ${name.padEnd(46)}${fmt(v, 2).padStart(8)}   info`,
  );
  return { table: alignTable(table), ratios: lines };
}
