// Load for bench/state/run.mjs: wrk (core 0) sending absolute-form GETs through trajgate as a
// fleet of agents (agents.lua), one wrk per gateway when the load is spread over replicas.
import { join } from 'node:path';
import { pin } from '../run-setup.mjs';
import { run } from '../proxy/procs.mjs';
import { basic } from './targets.mjs';

const toMs = { us: 1e-3, ms: 1, s: 1e3 };
const latencyAt = (out, pct) => {
  const m = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(out);
  return m ? Number(m[1]) * toMs[m[2]] : null;
};

/**
 * One wrk run of `seconds` against the proxy on `port`: `connections` keep-alive connections,
 * each request as the next of `agents` (ids), to `url`. Resolves its figures or { error }.
 */
export async function wrk({ here, port, url, agents, connections, seconds }) {
  const args = ['-t', '1', '-c', `${connections}`, '-d', `${seconds}s`, '--latency'];
  args.push('-s', join(here, 'agents.lua'), `http://127.0.0.1:${port}/`);
  const env = { ...process.env, TARGET_URL: url, AUTHS: agents.map(basic).join(',') };
  const r = await run(...pin(0, 'wrk', args), { env, timeoutMs: (seconds + 30) * 1000 });
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(r.stdout);
  if (r.code !== 0 || !rps) return { error: `wrk exited ${r.code}: ${r.stderr.trim()}` };
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    r.stdout,
  );
  const [p50ms, p99ms] = [latencyAt(r.stdout, 50), latencyAt(r.stdout, 99)];
  return {
    rps: Number(rps[1]),
    p50ms,
    p99ms,
    ...(p50ms === null || p99ms === null ? { wrkOutput: r.stdout } : {}),
    requests: Number(/(\d+) requests in/.exec(r.stdout)?.[1] ?? 0),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.stdout)?.[1] ?? 0),
    socketErrors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

/**
 * The same load spread over `gateways`: one wrk each, at once, with an equal share of the
 * connections and a disjoint share of the agents (a load balancer with session affinity).
 * Aggregate req/s is the sum; p99 the worst of the gateways'.
 */
export async function spread({ here, gateways, url, agents, connections, seconds }) {
  const n = gateways.length;
  const per = Math.ceil(agents.length / n);
  const results = await Promise.all(
    gateways.map((g, i) =>
      wrk({
        here,
        port: g.proxy,
        url,
        agents: agents.slice(i * per, (i + 1) * per),
        connections: Math.max(1, Math.round(connections / n)),
        seconds,
      }),
    ),
  );
  const failed = results.find((r) => r.error);
  if (failed) return { error: failed.error, each: results };
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  return {
    rps: sum('rps'),
    p99ms: results.some((r) => r.p99ms === null) ? null : Math.max(...results.map((r) => r.p99ms)),
    requests: sum('requests'),
    non2xx: sum('non2xx'),
    socketErrors: sum('socketErrors'),
    each: results.map((r) => ({
      rps: r.rps,
      p50ms: r.p50ms,
      p99ms: r.p99ms,
      wrkOutput: r.wrkOutput,
    })),
  };
}

/** Latency per decision: one connection, one request in flight, agents in turn. */
export const oneAtATime = ({ here, port, url, agents, seconds }) =>
  wrk({ here, port, url, agents, connections: 1, seconds });
