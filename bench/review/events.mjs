// The operator's reads must not slow the agents: against a large journal, agents send paced
// traffic through the proxy in rounds without and with admin callers that read the events
// route (newest pages, paging by `next` past the index, a session whose events are all at the
// file's start) and /api/sessions flat out. Prints the agents' p99 of both and their ratio,
// then a burst past the admin queue (429). Loopback only; every wait is bounded.
//
//   npm run build && node bench/review/events.mjs [--lines 1500000] [--agents 20] [--rate 1000]
//     [--seconds 3] [--rounds 4] [--callers 4] [--max-ratio 1.5] [--keep]
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ARCHIVED, writeBigJournal } from './big-journal.mjs';
import { memory, pinSelf, sleep, startGateway, startUpstream } from './gateway.mjs';

const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '1500000' },
    agents: { type: 'string', default: '20' },
    rate: { type: 'string', default: '1000' }, // agents' requests per second, all together
    seconds: { type: 'string', default: '3' }, // per phase
    rounds: { type: 'string', default: '4' }, // each round: agents alone, then with callers
    callers: { type: 'string', default: '4' }, // admin calls in flight: 1 runs, the rest wait
    'max-ratio': { type: 'string', default: '1.5' },
    keep: { type: 'boolean', default: false },
  },
});
const [LINES, AGENTS, RATE, SECONDS, ROUNDS, CALLERS] = [
  'lines',
  'agents',
  'rate',
  'seconds',
  'rounds',
  'callers',
].map((k) => Number(values[k]));
const ADMIN = 'bench-admin-token-0123456789abcdef';
const PAGES = 12; // pages of 1,000 per session walk: past the index's 10,240 into the file

const pinned = pinSelf('0');
const dir = mkdtempSync(join(tmpdir(), 'trajgate-review-events-'));
// The journal's folder and the workspace apart, as start requires.
const journal = join(dir, 'data', 'journal.jsonl');
mkdirSync(join(dir, 'data'));
mkdirSync(join(dir, 'workspace'));
const agents = Array.from({ length: AGENTS }, (_, i) => ({
  id: `agent-${String(i).padStart(3, '0')}`,
  token: `bench-agent-${i}-${Math.random().toString(36).slice(2)}-0123456789`,
}));
let t = performance.now();
const big = writeBigJournal(journal, { lines: LINES, sessions: agents.map((a) => a.id) });
const wroteS = (performance.now() - t) / 1000;
const upstream = await startUpstream();
const config = join(dir, 'trajgate.yaml');
writeFileSync(
  config,
  JSON.stringify({
    version: 1,
    workspace: join(dir, 'workspace'),
    journal,
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents,
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  }),
);
t = performance.now();
const gw = await startGateway(config, { timeoutMs: 300_000 });
const startS = (performance.now() - t) / 1000;
const atStart = memory(gw.pid);
const adminAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * GET on the admin API, keeping only the status, headers, size and the body's last bytes (the
 * `next` cursor): the load generator shares a core with the agents and their upstream.
 */
function call(path) {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port: gw.adminPort,
      path,
      agent: adminAgent,
      headers: { authorization: `Bearer ${ADMIN}` },
      timeout: 30_000,
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', () => resolve({ status: 0, headers: {}, bytes: 0, tail: '' }));
    req.on('response', (res) => {
      let bytes = 0;
      let tail = Buffer.alloc(0);
      res.on('data', (chunk) => {
        bytes += chunk.length;
        tail = Buffer.concat([tail, chunk]).subarray(-64);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode, headers: res.headers, bytes, tail: `${tail}` }),
      );
    });
    req.end();
  });
}

function get(agent, auth, url) {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port: gw.proxyPort,
      path: url,
      agent,
      headers: { host: new URL(url).host, 'proxy-authorization': auth },
      timeout: 30_000,
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', () => resolve(0));
    req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode)));
    req.end();
  });
}

/**
 * Each agent sends on its own schedule (RATE / AGENTS a second), one request at a time. A
 * request sent on time is timed from when it was sent; one sent late because the previous
 * answer was late is timed from when it was due, so a stalled proxy shows in full.
 */
async function agentsFor(ms) {
  const until = performance.now() + ms;
  const interval = (AGENTS * 1000) / RATE;
  const latencies = [];
  let failed = 0;
  await Promise.all(
    agents.map(async (a, i) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const auth = `Basic ${Buffer.from(`${a.id}:${a.token}`).toString('base64')}`;
      let due = performance.now() + (i * interval) / AGENTS;
      for (let k = 0; due < until; k++, due += interval) {
        const early = due - performance.now();
        if (early > 0) await sleep(early);
        const from = early > 0 ? performance.now() : due;
        const status = await get(agent, auth, `http://127.0.0.1:${upstream.port}/a/${a.id}/${k}`);
        latencies.push(performance.now() - from);
        if (status !== 200) failed++;
      }
      agent.destroy();
    }),
  );
  return { latencies, failed };
}

/** CALLERS loops of admin reads until the agents are done; each walks a session's pages. */
async function callersWhile(agentsDone) {
  const stats = { calls: 0, bytes: 0, latencies: [], failed: 0 };
  let running = true;
  agentsDone.then(() => (running = false));
  const timed = async (path) => {
    const t0 = performance.now();
    const r = await call(path);
    stats.latencies.push(performance.now() - t0);
    stats.calls++;
    stats.bytes += r.bytes;
    if (r.status !== 200) stats.failed++;
    return r;
  };
  const loop = async (c) => {
    for (let n = c; running; n += CALLERS) {
      const session = n % 3 === 2 ? ARCHIVED : agents[n % AGENTS].id;
      let cursor = '';
      for (let p = 0; p < PAGES && running; p++) {
        const r = await timed(`/api/sessions/${session}/events?limit=1000${cursor}`);
        const next = /"next":(\d+)\}$/.exec(r.tail)?.[1];
        if (!next) break;
        cursor = `&before=${next}`;
      }
      await timed('/api/sessions');
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, (_, c) => loop(c)));
  return stats;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const ms = (x) => x.toFixed(2);

await agentsFor(1_000); // warm-up: connections, JIT
const runs = { alone: [], read: [] };
let callers = { calls: 0, bytes: 0, latencies: [], failed: 0 };
let failed = 0;
for (let r = 0; r < ROUNDS; r++) {
  const alone = await agentsFor(SECONDS * 1000);
  const withCalls = agentsFor(SECONDS * 1000);
  const c = await callersWhile(withCalls);
  const read = await withCalls;
  runs.alone.push(...alone.latencies);
  runs.read.push(...read.latencies);
  failed += alone.failed + read.failed;
  callers = {
    calls: callers.calls + c.calls,
    bytes: callers.bytes + c.bytes,
    latencies: [...callers.latencies, ...c.latencies],
    failed: callers.failed + c.failed,
  };
}

// Past the queue: 1 running + 16 waiting are served, the rest refused at once.
const burst = await Promise.all(
  Array.from({ length: 64 }, (_, i) =>
    call(`/api/sessions/${agents[i % AGENTS].id}/events?limit=1000&before=${LINES >> 2}`),
  ),
);
const refused = burst.filter((r) => r.status === 429);
const retryAfter = refused.every((r) => r.headers['retry-after'] === '1');
const peak = memory(gw.pid);
const code = await gw.stop();
await upstream.close();

const [a99, r99] = [pct(runs.alone, 99), pct(runs.read, 99)];
const ratio = r99 / a99;
console.log(
  `pinned: ${pinned ? 'bench on core 0, gateway on core 1' : 'no (taskset missing)'}; host load average ${loadavg()[0].toFixed(1)} (1 min) at the end`,
);
console.log(
  `journal: ${big.lines.toLocaleString('en')} lines, ${(big.bytes / 2 ** 20).toFixed(0)} MiB, written in ${wroteS.toFixed(1)} s; gateway up (read back + index) in ${startS.toFixed(1)} s`,
);
console.log(`agents: ${AGENTS} at ${RATE} req/s together, ${ROUNDS} × ${SECONDS} s per phase`);
console.log('| phase | requests | p50 ms | p99 ms |');
console.log('| --- | --- | --- | --- |');
console.log(`| agents alone | ${runs.alone.length} | ${ms(pct(runs.alone, 50))} | ${ms(a99)} |`);
console.log(
  `| agents + admin reads | ${runs.read.length} | ${ms(pct(runs.read, 50))} | ${ms(r99)} |`,
);
console.log(
  `admin reads: ${callers.calls} calls (${(callers.calls / (ROUNDS * SECONDS)).toFixed(0)}/s), ${(callers.bytes / 2 ** 20).toFixed(0)} MiB answered, p50 ${ms(pct(callers.latencies, 50))} ms, p99 ${ms(pct(callers.latencies, 99))} ms, max ${ms(Math.max(...callers.latencies))} ms`,
);
console.log(
  `agents' p99 ratio (with / without admin reads): ${ratio.toFixed(2)} (limit ${values['max-ratio']})`,
);
console.log(
  `burst of 64 events calls: ${burst.filter((r) => r.status === 200).length} answered 200, ${refused.length} refused 429 (Retry-After: 1 on each: ${retryAfter})`,
);
console.log(
  `gateway RSS: ${atStart?.rss.toFixed(0)} MB after start, peak ${peak?.hwm.toFixed(0)} MB; exit ${code}`,
);
const failures = [
  ...(ratio > Number(values['max-ratio']) ? [`p99 ratio ${ratio.toFixed(2)}`] : []),
  ...(failed > 0 ? [`${failed} agent requests failed`] : []),
  ...(callers.failed > 0 ? [`${callers.failed} admin reads failed`] : []),
  ...(refused.length === 0 || !retryAfter ? ['no 429 with Retry-After past the queue'] : []),
  ...(code !== 0 ? [`gateway exit ${code}`] : []),
];
if (!values.keep) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);
if (failures.length > 0) console.log(`FAILED: ${failures.join('; ')}`);
process.exit(failures.length > 0 ? 1 : 0);
