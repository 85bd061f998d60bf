// Soak: the gateway (`trajgate start --config …`) under a steady mixed load for a long run —
// paced agent sessions through the proxy, some drifting into PAUSE, an operator resuming,
// approving and denying, every pause and review notified to a slow webhook receiver (some
// requests it never answers). Samples the gateway's RSS, open fds, held requests and webhook
// queue, prints them every --every seconds, and ends with a verdict: flat after warm-up or not.
// Loopback only; every loop ends at the deadline and every request has a timeout.
//
//   npm run build && node bench/review/soak.mjs [--minutes 10] [--sessions 100] [--pace-ms 40]
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { admin, operator, runAgents } from './clients.mjs';
import { memory, pinSelf, sleep, startGateway, startUpstream, writeConfig } from './gateway.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    sessions: { type: 'string', default: '100' },
    drifting: { type: 'string', default: '5' }, // every Nth session drifts into PAUSE
    'pace-ms': { type: 'string', default: '40' }, // per session loop: one request per pace
    'hook-ms': { type: 'string', default: '1000' }, // the receiver answers this late…
    'hook-hang': { type: 'string', default: '10' }, // …and never answers every Nth request
    queue: { type: 'string', default: '1000' },
    every: { type: 'string', default: '30' }, // seconds between printed samples
    warmup: { type: 'string' }, // seconds; default a fifth of the run
    'rss-tolerance': { type: 'string', default: '10' }, // % over the first half's median
    'fd-tolerance': { type: 'string', default: '32' }, // fds over the first half's peak
  },
});
const SECONDS = Number(values.minutes) * 60;
const WARMUP = Number(values.warmup ?? SECONDS / 5);
const EVERY = Number(values['drifting']);
const ADMIN = 'soak-admin-token-0123456789abcdef';

/** A webhook receiver that answers 204 after `delayMs`, and every `hangEvery`th never. */
async function startSlowReceiver(delayMs, hangEvery) {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    if (++n % hangEvery === 0) return; // closed by the gateway's notify.timeout
    const timer = setTimeout(() => res.writeHead(204).end(), delayMs);
    res.once('close', () => clearTimeout(timer));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    requests: () => n,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

const pinned = pinSelf('0');
const dir = mkdtempSync(join(tmpdir(), 'trajgate-review-soak-'));
const allowed = await startUpstream();
const other = await startUpstream();
const hook = await startSlowReceiver(Number(values['hook-ms']), Number(values['hook-hang']));
const { config, agents } = writeConfig(dir, {
  sessions: Number(values.sessions),
  allowedPort: allowed.port,
  adminToken: ADMIN,
  policy: { holdTimeout: '2s' },
  notify: {
    webhook: hook.url,
    on: ['pause', 'review'],
    timeout: '2s',
    queue: Number(values.queue),
  },
});

const gw = await startGateway(config);
const call = admin(gw.adminPort, ADMIN);
const started = Date.now();
const until = started + SECONDS * 1000;
const tally = { requests: 0, errors: 0 };
let interval = { requests: 0, errors: 0, since: started };

/** One reading of the gateway: RSS, open fds, and the gauges and counters of /metrics. */
async function sample() {
  const text = (await call('GET', '/metrics')).text;
  const m = (name) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);
  const now = Date.now();
  const s = {
    t: Math.round((now - started) / 1000),
    rss: memory(gw.pid)?.rss ?? NaN,
    heap: m('nodejs_heap_size_used_bytes') / 2 ** 20,
    fds: readdirSync(`/proc/${gw.pid}/fd`).length,
    held: m('trajgate_held_requests'),
    paused: m('trajgate_paused_sessions'),
    queued: m('trajgate_webhook_queued'),
    dropped: m('trajgate_webhook_dropped_total'),
    failed: m('trajgate_webhook_failures_total'),
    reqPerS: Math.round(interval.requests / ((now - interval.since) / 1000)),
    errors: interval.errors,
  };
  interval = { requests: 0, errors: 0, since: now };
  return s;
}
const line = (s) =>
  `${String(s.t).padStart(5)} s  RSS ${s.rss.toFixed(1).padStart(6)} MB (heap used ${s.heap.toFixed(1)})` +
  `  fds ${String(s.fds).padStart(4)}` +
  `  held ${s.held} (paused ${s.paused})  webhook queued ${s.queued}, dropped ${s.dropped},` +
  ` failed ${s.failed}  ${s.reqPerS} req/s, ${s.errors} client errors`;

console.log(
  `soak: ${agents.length} sessions (every ${EVERY}th drifting), ${values['pace-ms']} ms pace,` +
    ` ${SECONDS} s (warm-up ${WARMUP} s), webhook answers after ${values['hook-ms']} ms` +
    ` (every ${values['hook-hang']}th never); gateway pid ${gw.pid}` +
    `${pinned ? ' on core 1, load on core 0' : ''}; ${dir}`,
);
const samples = [];
const sampling = (async () => {
  for (let next = started; Date.now() < until;) {
    next += Number(values.every) * 1000;
    await sleep(Math.max(0, Math.min(next, until) - Date.now()));
    const s = await sample();
    samples.push(s);
    console.log(line(s));
  }
})();
const op = operator(call, { everyMs: 200, ignoreMs: 3_000 });
await runAgents({
  agents,
  proxyPort: gw.proxyPort,
  allowedPort: allowed.port,
  otherPort: other.port,
  until,
  drifting: (i) => i % EVERY === EVERY - 1,
  paceMs: Number(values['pace-ms']),
  record: (r) => {
    tally.requests++;
    interval.requests++;
    if (r.error) {
      tally.errors++;
      interval.errors++;
    }
  },
});
await sampling;
const ops = await op.stop();
const exit = await gw.stop();
await Promise.all([allowed.close(), other.close(), hook.close()]);
rmSync(dir, { recursive: true, force: true });

// Flat: after warm-up, the last half's median RSS stays within a tolerance of the first half's
// (RSS swings with GC and load: a median passes over a spike, not over a climb) and its fd
// peak within a few of the first half's.
const after = samples.filter((s) => s.t >= WARMUP);
const half = Math.floor(after.length / 2);
const [early, late] = [after.slice(0, half), after.slice(half)];
const peak = (list, k) => Math.max(...list.map((s) => s[k]));
const median = (list, k) => list.map((s) => s[k]).sort((a, b) => a - b)[list.length >> 1];
const growth = [];
if (after.length < 4)
  growth.push(`${after.length} samples after warm-up: run longer or lower --every`);
else {
  const rssLimit = median(early, 'rss') * (1 + Number(values['rss-tolerance']) / 100);
  if (median(late, 'rss') > rssLimit)
    growth.push(
      `median RSS rose to ${median(late, 'rss').toFixed(1)} MB, over ${rssLimit.toFixed(1)} MB`,
    );
  const fdLimit = peak(early, 'fds') + Number(values['fd-tolerance']);
  if (peak(late, 'fds') > fdLimit)
    growth.push(`open fds peaked at ${peak(late, 'fds')}, over ${fdLimit}`);
}
const problems = [];
if (samples.some((s) => s.queued > Number(values.queue)))
  problems.push('webhook queue past notify.queue');
if (tally.errors > 0) problems.push(`${tally.errors} client requests failed`);
if (ops.errors > 0) problems.push(`${ops.errors} operator API calls failed`);
if (exit !== 0) problems.push(`gateway exit on SIGTERM: ${exit}`);
console.log(
  `\n${tally.requests} requests; operator: ${ops.resumes} resumes, ${ops.denies} denials,` +
    ` ${ops.approvals} approvals; webhook receiver got ${hook.requests()} requests`,
);
if (growth.length > 0) console.log(`NOT flat after warm-up:\n  ${growth.join('\n  ')}`);
else {
  const mb = (list) => `${median(list, 'rss').toFixed(1)} (peak ${peak(list, 'rss').toFixed(1)})`;
  console.log(
    `flat after warm-up: first and last half of ${after.length} samples from ${after[0].t} s:` +
      ` RSS median ${mb(early)} then ${mb(late)} MB (tolerance ${values['rss-tolerance']} %),` +
      ` fds peak ${peak(early, 'fds')} then ${peak(late, 'fds')} (tolerance ${values['fd-tolerance']}),` +
      ` held peak ${peak(early, 'held')} then ${peak(late, 'held')}`,
  );
}
if (problems.length > 0) console.log(`problems:\n  ${problems.join('\n  ')}`);
process.exit(growth.length + problems.length > 0 ? 1 : 0);
