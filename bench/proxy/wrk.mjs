// wrk runs for run.mjs, straight at the upstream or through a proxy (proxy.lua), over
// keep-alive connections or with a new TCP connection per request, parsed into figures.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './procs.mjs';

const toMs = { us: 1e-3, ms: 1, s: 1e3 };

/** Connections opened on this host so far (Tcp ActiveOpens: every process, every port). */
function activeOpens() {
  const [names, values] = readFileSync('/proc/net/snmp', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('Tcp:'))
    .map((line) => line.trim().split(/\s+/));
  return Number(values[names.indexOf('ActiveOpens')]);
}

/**
 * TIME_WAIT sockets on the client side of connections to `port`: each holds an ephemeral port,
 * so these (not the server's, which SYNs recycle) are what could exhaust the range.
 */
function clientTimeWait(port) {
  const remote = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let n = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[3] === '06' && f[2]?.endsWith(remote)) n++;
  }
  return n;
}

/**
 * A runner: `wrk(proxyPort, seconds, { close })` — wrk on core 0 with `connections` for
 * `targetUrl`, through the proxy on `proxyPort` (null: direct). With `close`, every request
 * says `Connection: close`; the result then also has `closes` (responses that said close, after
 * which wrk reconnects; fewer than `requests` means connections were reused), `connects` (the
 * host's new connections meanwhile: context only, it counts other processes' too) and
 * `clientTimeWait`.
 */
export function wrkRunner({ here, pin, targetUrl, threads, connections }) {
  return async function wrk(proxyPort, seconds, { close = false } = {}) {
    const args = ['-t', `${threads}`, '-c', `${connections}`, '-d', `${seconds}s`, '--latency'];
    const env = { ...process.env, ...(close ? { CONNECTION_CLOSE: '1' } : {}) };
    if (proxyPort) env.TARGET_URL = targetUrl;
    if (proxyPort || close) args.push('-s', join(here, 'proxy.lua'));
    args.push(proxyPort ? `http://127.0.0.1:${proxyPort}/` : targetUrl);
    const opensBefore = activeOpens();
    const r = await run(...pin(0, 'wrk', args), { env, timeoutMs: (seconds + 30) * 1000 });
    const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(r.stdout);
    const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)[ \t]*$/m.exec(r.stdout);
    const closes = /^Responses with Connection: close: (\d+)$/m.exec(r.stdout);
    if (r.code !== 0 || !rps || !p99 || (close && !closes))
      return { error: `wrk exited ${r.code}: ${(r.stderr.trim() || r.stdout.trim()).slice(-300)}` };
    const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
      r.stdout,
    );
    const result = {
      rps: Number(rps[1]),
      p99ms: Number(p99[1]) * toMs[p99[2]],
      requests: Number(/(\d+) requests in/.exec(r.stdout)[1]),
      non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.stdout)?.[1] ?? 0),
      socketErrors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    };
    if (!close) return result;
    return {
      ...result,
      closes: Number(closes[1]),
      connects: activeOpens() - opensBefore,
      clientTimeWait: clientTimeWait(proxyPort ?? Number(new URL(targetUrl).port)),
    };
  };
}

/** The ephemeral port range and whether connect() may reuse a TIME_WAIT port (2: loopback). */
export function tcpSettings() {
  const read = (name) => readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim();
  const [low, high] = read('ip_local_port_range').split(/\s+/).map(Number);
  return { ephemeralPorts: high - low + 1, twReuse: Number(read('tcp_tw_reuse')) };
}
