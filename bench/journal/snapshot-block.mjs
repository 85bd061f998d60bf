// The longest event-loop block while a rotation snapshots N sessions (a check, not a test).
// The state is made as the gateway makes it (normalize, guard.inspect, journal, commit,
// review.observe: 3 events and their outcomes a session, one in ten a REVIEW); then the
// journal rotates with the gateway's snapshot source while a request a millisecond goes on
// (each one dirtying a session the build may have written). Measured: the event loop's
// largest delay (perf_hooks.monitorEventLoopDelay) and the largest gap between 1 ms timer
// ticks, the seal's own time, the snapshot's size and lines. Usage (after `npm run build`):
// node bench/journal/snapshot-block.mjs [N]
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { parseConfig } from '../../dist/config/load.js';
import { normalizeEvent } from '../../dist/event/normalize.js';
import { compilePolicy } from '../../dist/guard/compile.js';
import { Guard } from '../../dist/guard/guard.js';
import { MemoryStore } from '../../dist/guard/store.js';
import { digestOf } from '../../dist/journal/chain.js';
import { eventRecord } from '../../dist/journal/records.js';
import { SessionIndex } from '../../dist/journal/session-index.js';
import { JournalWriter } from '../../dist/journal/writer.js';
import { Denials } from '../../dist/review/pause-ends.js';
import { Review } from '../../dist/review/review.js';
import { snapshotOptions } from '../../dist/review/snapshot.js';

const N = Number(process.argv[2] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), 'trajgate-snapshot-block-'));
const WS = join(dir, 'ws');
const config = parseConfig(
  stringify({
    version: 1,
    workspace: WS,
    journal: { path: './journal.jsonl', rotate: '4KiB', keep: 5 },
    network: { allow: ['registry.example.com'] },
  }),
  join(dir, 'trajgate.yaml'),
  dir,
);
const path = config.journal.path;
const store = new MemoryStore();
const parts = {
  guard: new Guard(compilePolicy(config), store),
  store,
  review: new Review(config, pino({ level: 'silent' }), store),
  denials: new Denials(),
  index: new SessionIndex(),
  recentEvents: config.policy.recentEvents,
};
const onAppend = (record, seq, offset, bytes) => {
  parts.index.add(record, seq, offset, bytes);
  parts.denials.observe(record, seq);
};
const session = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** One request of session `s` decided, journaled and installed as the gateway does. */
function request(w, s, i) {
  const ts = Date.now();
  const host = i % 10 === 7 ? `unknown-${i % 97}.example.net` : 'registry.example.com';
  const event = normalizeEvent(
    { kind: 'network', target: `https://${host}/packages/${i}/index.json`, method: 'GET' },
    { session: s, source: 'proxy', ts, workspace: WS },
  );
  const decision = parts.guard.inspect(event);
  const record = eventRecord(event, decision);
  const seq = w.append(record, { ts });
  parts.guard.commit(s, ts, decision, { seq, kind: 'network', target: event.target });
  parts.review.observe({ seq, ts: w.iso(ts), ...record }, ts);
  const outcome = { type: 'outcome', rid: seq, session: s, status: 200, bytesUp: 0 };
  w.appendLater({ ...outcome, bytesDown: 300, durationMs: 2 }, ts);
  parts.guard.outcome(s, seq, { failed: false, bytesUp: 0, ts });
}

// The state: N sessions, 3 requests each, journaled without rotation.
const t0 = performance.now();
const seeding = new JournalWriter(path, { lastSeq: 0, fsyncMs: 1000, onAppend });
for (let i = 0; i < 3 * N; i++) {
  request(seeding, session(i % N), i);
  if (i % 4096 === 4095) await nextTurn();
}
seeding.close();
const seeded = performance.now() - t0;

// The same journal, rotating: due at once (4 KiB), built while requests go on.
const { rotate } = snapshotOptions(config.journal, parts, (m) => process.stderr.write(`${m}\n`));
const last = statSync(path).size;
const writer = new JournalWriter(path, {
  lastSeq: seeding.lastSeq,
  prev: digestOf(
    tail(path, 1 << 16)
      .split('\n')
      .at(-2),
  ),
  fsyncMs: 1000,
  onAppend,
  rotate,
});
const delay = monitorEventLoopDelay({ resolution: 1 });
let gap = 0;
let tick = performance.now();
let requests = 0;
const traffic = setInterval(() => {
  const now = performance.now();
  gap = Math.max(gap, now - tick);
  tick = now;
  request(writer, session((requests * 7919) % N), 3 * N + requests++);
}, 1);
delay.enable();
const start = performance.now();
request(writer, session(0), 3 * N + requests++);
await writer.building;
const built = performance.now() - start;
// The next request seals the snapshot and rotates: timed alone.
const s0 = performance.now();
request(writer, session(1), 3 * N + requests++);
const seal = performance.now() - s0;
clearInterval(traffic);
delay.disable();
writer.close();
// The snapshot: its part lines and head, the new live file's first bytes.
const head = tail(path, 1 << 22)
  .split('\n')
  .find((l) => l.includes('"type":"snapshot","version"'));
const { parts: lines, digest: _digest } = JSON.parse(head);
const snapshotBytes = statSync(path).size - tail(path, 1 << 22).split(head)[1].length;
rmSync(dir, { recursive: true, force: true });

const ms = (n) => +n.toFixed(1);
console.log(
  JSON.stringify({
    sessions: N,
    seededSeconds: ms(seeded / 1000),
    journalBytes: last,
    buildMs: ms(built),
    requestsDuringBuild: requests,
    maxEventLoopDelayMs: ms(delay.max / 1e6),
    p99EventLoopDelayMs: ms(delay.percentile(99) / 1e6),
    maxTimerGapMs: ms(gap),
    sealMs: ms(seal),
    snapshotBytes,
    partLines: lines,
  }),
);

/** The last `bytes` bytes of a file, as text. */
function tail(file, bytes) {
  const size = statSync(file).size;
  const n = Math.min(size, bytes);
  const buf = Buffer.alloc(n);
  const fd = openSync(file, 'r');
  readSync(fd, buf, 0, n, size - n);
  closeSync(fd);
  return buf.toString('utf8');
}
