// A journal of `events` requests as a gateway writes it, quickly: each request an event record
// then its outcome, through the real JournalWriter (hash chain, rotation, snapshots) with the
// state a gateway keeps updated as it goes, so every rotated-to file starts with the snapshot
// a live gateway would have written. One in ten events is an unapproved host (REVIEW, counted,
// flagged); the rest are allowlisted. Used by restart.mjs.
import { statSync } from 'node:fs';
import { pino } from 'pino';

/**
 * Writes the history into the journal of `config` (a parsed Config); resolves how many events
 * and records. `fill`: past `events`, goes on until the live file is nearly `rotate` bytes, the
 * worst case for a restart (it reads the whole live file).
 */
export async function writeHistory(dist, config, { events, sessions, fill = false }) {
  const [
    { openJournal },
    { snapshotOptions },
    { applyRecord },
    store,
    guard,
    compile,
    review,
    links,
    index,
  ] = await Promise.all(
    [
      'journal/open.js',
      'review/snapshot.js',
      'journal/rebuild.js',
      'guard/store.js',
      'guard/guard.js',
      'guard/compile.js',
      'review/review.js',
      'review/pause-ends.js',
      'journal/session-index.js',
    ].map((m) => import(`${dist}/${m}`)),
  );
  const s = new store.MemoryStore();
  const parts = {
    store: s,
    guard: new guard.Guard(compile.compilePolicy(config), s),
    review: new review.Review(config, pino({ level: 'silent' }), s),
    denials: new links.Denials(),
    index: new index.SessionIndex(),
    recentEvents: config.policy.recentEvents,
  };
  const apply = (r) => {
    applyRecord(parts.guard, r);
    parts.review.restore(r);
  };
  const { writer } = openJournal(config.journal.path, apply, {
    fsyncMs: 1000,
    warn: (m) => process.stderr.write(`${m}\n`),
    ...snapshotOptions(config.journal, parts, (m) => process.stderr.write(`${m}\n`)),
  });
  const names = Array.from({ length: sessions }, (_, i) => `agent-${i}`);
  const counts = new Map();
  let ts = Date.now() - events * 2;
  const { path, rotate } = config.journal;
  const full = () => !fill || rotate === 0 || statSync(path).size >= 0.97 * rotate;
  let i = 0;
  for (; i < events || !full(); i++) {
    const session = names[i % sessions];
    ts += 1;
    const review = i % 10 === 7;
    const n = review ? (counts.get(session) ?? 0) + 1 : 0;
    if (review) counts.set(session, n);
    const host = review ? `unknown-${i % 97}.example.net` : 'registry.example.com';
    const record = {
      type: 'event',
      session,
      source: 'proxy',
      kind: 'network',
      target: `https://${host}/packages/${session}/${i}/index.json`,
      method: 'GET',
      approved: !review,
      verdict: review ? 'REVIEW' : 'ALLOW',
      boundary: review ? 'network' : null,
      count: n,
      reason: review
        ? `network: ${host}:443 is not allowlisted`
        : 'allowlisted: registry.example.com',
      ...(review ? { counted: { network: n } } : { approvedBy: 'registry.example.com' }),
    };
    // Written with the next write(2), as a gateway under load writes: one syscall a batch.
    const seq = writer.appendLater(record, ts);
    const iso = writer.iso(ts);
    apply({ seq, ts: iso, ...record });
    const outcome = {
      type: 'outcome',
      rid: seq,
      session,
      status: review ? 403 : 200,
      bytesUp: 0,
      bytesDown: 300 + (i % 900),
      durationMs: i % 40,
    };
    apply({ seq: writer.appendLater(outcome, ts), ts: iso, ...outcome });
    // A gateway's snapshot builds go on between its requests: here, between batches.
    if (i % 4096 === 4095)
      await (writer.building ?? new Promise((resolve) => setImmediate(resolve)));
  }
  writer.close();
  return { events: i, records: writer.lastSeq };
}
