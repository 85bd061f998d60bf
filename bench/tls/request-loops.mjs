// The measuring half of the load clients (load.mjs: HTTP/1.1 through undici; bench/proxy's
// h2-load.mjs: HTTP/2 streams): `concurrency` loops, each sending its next request as soon as
// its last one answered, a warm-up, then `duration` seconds counted. `once(n)` sends loop n's
// next request and resolves its status. Prints one JSON line.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

/** The options every load client takes, and `extra` ones of its own. */
export function loadArgs(extra = {}) {
  return parseArgs({
    options: {
      proxy: { type: 'string' },
      target: { type: 'string' },
      ca: { type: 'string' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      probe: { type: 'boolean', default: false },
      'cpu-pid': { type: 'string' },
      ...extra,
    },
  }).values;
}

/** `--probe`: one request (loop 0's); else the measured loops. */
export function runLoad(values, { concurrency, once }) {
  if (values.probe) return probe(() => once(0));
  return measure({
    concurrency,
    once,
    warmup: Number(values.warmup),
    duration: Number(values.duration),
    cpuPid: values['cpu-pid'] && Number(values['cpu-pid']),
  });
}

/** The middle value (of an even count, the mean of the middle two); null for none. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? null
    : s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** utime + stime of process `pid`, in µs (clock ticks of 10 ms), or null if it is not ours to read. */
function cpuUs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 1e4;
  } catch {
    return null;
  }
}

/** One request; prints {"status":N} or {"error":…}. */
async function probe(once) {
  try {
    process.stdout.write(JSON.stringify({ status: await once() }) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: err.code ?? err.message }) + '\n');
  }
}

/**
 * Runs the loops and prints requests/s, latency percentiles (ms), errors, the client's own CPU
 * (share of one core over the counted seconds: near 1, the client is the limit) and, with
 * `cpuPid` (the proxy under test), that process's CPU µs per counted request.
 */
async function measure({ concurrency, once, warmup, duration, cpuPid }) {
  let recording = false;
  let stopped = false;
  let requests = 0;
  let errors = 0;
  let non2xx = 0;
  let errorSample = null;
  const latencies = [];

  async function loop(_, n) {
    while (!stopped) {
      const t0 = performance.now();
      try {
        const status = await once(n);
        if (!recording) continue;
        requests++;
        if (status < 200 || status > 299) non2xx++;
        latencies.push(performance.now() - t0);
      } catch (err) {
        if (recording) errors++;
        errorSample ??= err.code ?? err.message;
        await sleep(10);
      }
    }
  }

  const loops = Array.from({ length: concurrency }, loop);
  await sleep(warmup * 1000);
  recording = true;
  const started = performance.now();
  const clientBefore = process.cpuUsage();
  const proxyBefore = cpuPid ? cpuUs(cpuPid) : null;
  await sleep(duration * 1000);
  recording = false;
  const seconds = (performance.now() - started) / 1000;
  const proxyAfter = cpuPid ? cpuUs(cpuPid) : null;
  const client = process.cpuUsage(clientBefore);
  stopped = true;
  await Promise.race([Promise.all(loops), sleep(5000)]);
  latencies.sort((a, b) => a - b);
  const pct = (p) =>
    latencies.length === 0
      ? null
      : latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  const proxyUs = proxyBefore === null || proxyAfter === null ? null : proxyAfter - proxyBefore;
  process.stdout.write(
    JSON.stringify({
      requests,
      seconds,
      rps: requests / seconds,
      p50: pct(0.5),
      p99: pct(0.99),
      max: latencies.at(-1) ?? null,
      errors,
      non2xx,
      errorSample,
      clientCpu: (client.user + client.system) / 1e6 / seconds,
      proxyCpuUsPerRequest: proxyUs === null || requests === 0 ? null : proxyUs / requests,
    }) + '\n',
  );
}
