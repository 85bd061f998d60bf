// Pause propagation for bench/state/run.mjs: an agent's tunnel is open on replica B, relaying a
// byte every millisecond to an echo server; two unapproved requests of that agent on replica A
// REVIEW then PAUSE it. Measured per sample: (1) from sending the pausing request to A until the
// last byte B's tunnel relayed (the client's view, within ~1 ms), (2) from A's pause record to
// B's `tunnel frozen` record (the journals' clocks: same host, ms resolution).
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { sleep } from '../proxy/procs.mjs';
import { basic } from './targets.mjs';

/** Records appended to `path` since byte `from` (whole lines only). */
function tail(path, from) {
  const size = statSync(path).size;
  if (size <= from) return [];
  const buf = Buffer.alloc(size - from);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString('utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** One GET through the proxy on `port` as `agent`; resolves its status and verdict header. */
function get(port, url, agent) {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: url,
      agent: false,
      timeout: 5000,
      headers: { host: new URL(url).host, 'proxy-authorization': `Basic ${basic(agent)}` },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode, verdict: res.headers['x-trajgate-verdict'] }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err) => resolve({ status: 0, verdict: err.message }));
    req.end();
  });
}

/** CONNECT through B to the echo server as `agent`: resolves the socket once it relays. */
function openTunnel(port, target, agent) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`tunnel for ${agent}: no answer`));
    }, 5000);
    let head = '';
    const onData = (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      clearTimeout(timer);
      socket.off('data', onData);
      if (!/^HTTP\/1\.1 200/.test(head)) reject(new Error(`tunnel for ${agent}: ${head}`));
      else resolve(socket);
    };
    socket.on('data', onData);
    socket.on('error', (err) => reject(err));
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` +
        `Proxy-Authorization: Basic ${basic(agent)}\r\n\r\n`,
    );
  });
}

async function until(check, ms) {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(2)) {
    const v = check();
    if (v) return v;
  }
  return null;
}

/** One sample; resolves { clientMs, journalMs } (null where it did not freeze within 3 s). */
async function sample({ a, b, echo, stranger, agent }) {
  const socket = await openTunnel(b.proxy, `127.0.0.1:${echo}`, agent);
  socket.on('error', () => {});
  let echoes = 0;
  let lastEcho = 0;
  socket.on('data', () => {
    echoes++;
    lastEcho = performance.now();
  });
  const ping = setInterval(() => socket.write('x'), 1);
  try {
    if (!(await until(() => echoes >= 5, 2000))) throw new Error(`tunnel for ${agent}: no echo`);
    const fromA = statSync(a.journal).size;
    const fromB = statSync(b.journal).size;
    const stranger1 = `http://127.0.0.1:${stranger}/${agent}/1`;
    const first = await get(a.proxy, stranger1, agent);
    if (!/^REVIEW/.test(first.verdict ?? '')) throw new Error(`first: ${JSON.stringify(first)}`);
    const t0 = performance.now();
    const second = await get(a.proxy, `http://127.0.0.1:${stranger}/${agent}/2`, agent);
    if (!/^PAUSE/.test(second.verdict ?? '')) throw new Error(`second: ${JSON.stringify(second)}`);
    const frozen = await until(
      () =>
        tail(b.journal, fromB).find(
          (r) => r.type === 'tunnel' && r.session === agent && r.change === 'frozen',
        ),
      3000,
    );
    await sleep(30); // bytes already on their way come back; then the tunnel is silent
    const pause = tail(a.journal, fromA).find((r) => r.type === 'pause' && r.session === agent);
    return {
      clientMs: frozen ? Math.max(0, lastEcho - t0) : null,
      journalMs: frozen && pause ? Date.parse(frozen.ts) - Date.parse(pause.ts) : null,
    };
  } finally {
    clearInterval(ping);
    socket.destroy();
  }
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];

/** `agents.length` samples, one after the other; p50/p99/max of each measure and misses. */
export async function pausePropagation({ a, b, echo, stranger, agents }) {
  const client = [];
  const journal = [];
  let missed = 0;
  for (const agent of agents) {
    const s = await sample({ a, b, echo, stranger, agent });
    if (s.clientMs === null) missed++;
    else client.push(s.clientMs);
    if (s.journalMs !== null) journal.push(s.journalMs);
  }
  const stats = (xs) => {
    const sorted = [...xs].sort((x, y) => x - y);
    if (sorted.length === 0) return null;
    const r = (v) => Number(v.toFixed(2));
    return { p50: r(pct(sorted, 0.5)), p99: r(pct(sorted, 0.99)), max: r(sorted.at(-1)) };
  };
  return { samples: agents.length, missed, clientMs: stats(client), journalMs: stats(journal) };
}
