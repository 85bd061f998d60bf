// Review loop under load: 200 agent sessions through the proxy, some drifting into PAUSE, an
// operator resuming / denying them over the admin API while the load goes on. Then the journal
// is checked request by request. Loopback only; every wait is bounded.
//
//   npm run build && node bench/review/load.mjs [--sessions 200] [--seconds 15] [--drifting 10]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { check, readJournal } from './check.mjs';
import { admin, operator, runAgents } from './clients.mjs';
import { memory, pinSelf, sleep, startGateway, startUpstream, writeConfig } from './gateway.mjs';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '15' },
    drifting: { type: 'string', default: '10' }, // every Nth session drifts
    'hold-timeout': { type: 'string', default: '2s' }, // the operator ignores some pauses 3 s
    'max-peak-mb': { type: 'string', default: '300' },
    keep: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const SECONDS = Number(values.seconds);
const EVERY = Number(values.drifting);
const ADMIN = 'bench-admin-token-0123456789abcdef';

const pinned = pinSelf('0');
const dir = mkdtempSync(join(tmpdir(), 'trajgate-review-load-'));
const allowed = await startUpstream();
const other = await startUpstream();
const { config, agents, journal } = writeConfig(dir, {
  sessions: SESSIONS,
  allowedPort: allowed.port,
  adminToken: ADMIN,
  policy: { holdTimeout: values['hold-timeout'] },
  limits: { tunnelsPerSession: 64 },
});

const gw = await startGateway(config);
const call = admin(gw.adminPort, ADMIN);
await sleep(500);
const atStart = memory(gw.pid);
const samples = [];
const sampler = setInterval(() => samples.push(memory(gw.pid)?.rss ?? 0), 1000);

console.log(
  `review load: ${SESSIONS} sessions (every ${EVERY}th drifting), ${SECONDS} s, gateway pid ${gw.pid}` +
    ` on core 1${pinned ? ', load on core 0' : ' (taskset missing: not pinned)'}; ${dir}`,
);
const op = operator(call, { everyMs: 200, ignoreMs: 3_000 });
const started = Date.now();
const sent = await runAgents({
  agents,
  proxyPort: gw.proxyPort,
  allowedPort: allowed.port,
  otherPort: other.port,
  until: started + SECONDS * 1000,
  drifting: (i) => i % EVERY === EVERY - 1,
});
const elapsed = (Date.now() - started) / 1000;
const tally = await op.stop();

// nothing may be left held once the clients are done
const list = await call('GET', '/api/sessions');
const heldLeft = list.json.sessions.reduce((n, s) => n + s.held, 0);
const pausedLeft = list.json.sessions.filter((s) => s.state === 'paused').length;
const metrics = (await call('GET', '/metrics')).text;
const heldGauge = Number(/^trajgate_held_requests (\d+)/m.exec(metrics)?.[1]);
const atEnd = memory(gw.pid);
clearInterval(sampler);
const exit = await gw.stop();
await Promise.all([allowed.close(), other.close()]);

const j = await readJournal(journal);
const { failures, held } = check(j, sent);
if (heldLeft !== 0 || heldGauge !== 0)
  failures.push(`held after the load: API ${heldLeft}, metric ${heldGauge}`);
if (exit !== 0) failures.push(`gateway exit on SIGTERM: ${exit}`);
if (tally.errors > 0) failures.push(`operator API errors: ${tally.errors}`);
const peak = atEnd?.hwm ?? NaN;
if (!(peak <= Number(values['max-peak-mb'])))
  failures.push(`peak RSS ${peak.toFixed(0)} MB > ${values['max-peak-mb']} MB`);

const by = (k) => sent.reduce((m, s) => ((m[s[k]] = (m[s[k]] ?? 0) + 1), m), {});
const ms = sent.map((s) => s.ms).sort((a, b) => a - b);
const pct = (p) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))];
const mb = (x) => (x === undefined || Number.isNaN(x) ? '?' : `${x.toFixed(1)} MB`);
const summary = {
  sessions: SESSIONS,
  seconds: Number(elapsed.toFixed(1)),
  requests: sent.length,
  requestsPerSecond: Math.round(sent.length / elapsed),
  latencyMs: { p50: pct(50), p99: pct(99), max: ms.at(-1) },
  clientEnds: by('end'),
  journal: j.counts,
  held,
  operator: tally,
  pausedAtEnd: pausedLeft,
  rss: {
    start: mb(atStart?.rss),
    peak: mb(atEnd?.hwm),
    end: mb(atEnd?.rss),
    samples: samples.map((x) => Math.round(x)),
  },
};
console.log(JSON.stringify(summary, null, 2));
console.log(
  `\n${sent.length} requests in ${elapsed.toFixed(1)} s = ${summary.requestsPerSecond} req/s` +
    ` (p50 ${pct(50)} ms, p99 ${pct(99)} ms); pauses ${j.counts.pause}, resumes ${j.counts.resume},` +
    ` denials ${j.counts.deny}, approvals ${j.counts.approve}; held ${held.total}` +
    ` (sent ${held.sent}, refused again ${held.review}, denied ${held.denied}, timed out ${held.timeout});` +
    ` RSS start ${summary.rss.start}, peak ${summary.rss.peak}, end ${summary.rss.end}`,
);
if (!values.keep) rmSync(dir, { recursive: true, force: true });
if (failures.length > 0) {
  console.log(`\nFAILED (${failures.length}):\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('\nOK: every request has exactly one outcome after a decided event; none left held');
