// The sessions list's index at 100,000 sessions (a micro-check, not a test): loading them all
// (a start), the cost of one
// update (new activity moves a session to the front; a flag or pause moves it up a section),
// placed as the gateway places it (touch, then the next read's flush), and of one page of 100
// built from the start or after a cursor deep in the list; beside them, in the same run, one
// sort of every session's key: the least a list rebuilt on read would cost. Usage (after
// `npm run build`): node bench/fleet/sessions-index.mjs [N]
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { SessionList, sessionsQuery } from '../../dist/review/session-list.js';

const N = Number(process.argv[2] ?? 100_000);
const ROUNDS = 20_000;
const keys = new Map();
const list = new SessionList((id) => keys.get(id) ?? null);
let now = 1;
const id = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
for (let i = 0; i < N; i++) keys.set(id(i), { rank: 0, at: now++ });
const t0 = performance.now();
// As a start places them: at once, one sort.
list.load(keys.keys());
const built = performance.now() - t0;

/** Mean and p99 of `fn` over ROUNDS calls, in µs, after as many to warm it up (JIT). */
function measure(fn) {
  for (let r = 0; r < ROUNDS; r++) fn(r + ROUNDS);
  const times = [];
  for (let r = 0; r < ROUNDS; r++) {
    const s = performance.now();
    fn(r);
    times.push((performance.now() - s) * 1000);
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { mean: +mean.toFixed(2), p99: +times[Math.floor(times.length * 0.99)].toFixed(2) };
}

// Deterministic spread over the sessions.
const pick = (r) => id((r * 7919) % N);
const activity = measure((r) => {
  keys.set(pick(r), { rank: keys.get(pick(r)).rank, at: now++ });
  list.touch(pick(r));
  list.flush();
});
const moveUp = measure((r) => {
  keys.set(pick(r), { rank: (r % 2) + 1, at: now++ });
  list.touch(pick(r));
  list.flush();
});
const q = (query) => sessionsQuery(new URLSearchParams(query));
const first = measure(() => list.page(q('limit=100')));
const cursors = [];
let cursor = null;
for (let i = 0; i < 100 && (i === 0 || cursor !== null); i++) {
  const page = list.page(q(`limit=500${cursor ? `&cursor=${cursor}` : ''}`));
  cursors.push(page.next);
  cursor = page.next;
}
const deep = measure((r) => list.page(q(`limit=100&cursor=${cursors[r % cursors.length]}`)));
const s0 = performance.now();
[...keys].sort(([a, x], [b, y]) => y.rank - x.rank || y.at - x.at || (a < b ? -1 : 1));
const sortAll = performance.now() - s0;
const ms = (us) => ({ meanMs: +(us.mean / 1000).toFixed(3), p99Ms: +(us.p99 / 1000).toFixed(3) });
console.log(
  JSON.stringify(
    {
      sessions: N,
      loadAverage: +loadavg()[0].toFixed(1),
      loadAllMs: +built.toFixed(1),
      sortAllOnceMs: +sortAll.toFixed(1),
      updateActivityUs: activity,
      updateStateUs: moveUp,
      pageFirst100: ms(first),
      pageAfterCursor100: ms(deep),
    },
    null,
    2,
  ),
);
