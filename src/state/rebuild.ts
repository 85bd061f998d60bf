import type { Redis } from 'ioredis';
import type { Config } from '../config/load.js';
import { TrajgateError } from '../errors.js';
import { compilePolicy } from '../guard/compile.js';
import { Guard } from '../guard/guard.js';
import { MemoryStore } from '../guard/store.js';
import { unchained } from '../journal/chain.js';
import { journalFiles } from '../journal/files.js';
import { sharedSpelling } from '../journal/old-names.js';
import { applyRecord } from '../journal/rebuild.js';
import { readJournal } from '../journal/reader.js';
import type { EventRecord, JournalRecord } from '../journal/records.js';
import { checkVersion } from '../journal/snapshot-read.js';
import { restoreGuard, snapshotState } from '../review/snapshot.js';
import { encodeSession } from '../guard/state-codec.js';
import type { StoreKeys } from './keys.js';

/** The records that change what the guard remembers (rebuild.ts applyRecord). */
const STATE: ReadonlySet<string> = new Set([
  'event',
  'outcome',
  'result',
  'approve',
  'deny-pattern',
  'revoke',
  'resume',
  'evict',
]);

export interface Rebuilt {
  readonly store: MemoryStore<EventRecord>;
  readonly guard: Guard;
  readonly records: number;
}

/**
 * The shared trajectory as the gateways' journals tell it: each journal (with its rotated
 * files, oldest first) is read whole, the records of all of them are merged by time (each
 * journal's own order kept for equal times) and applied as a restart applies them. Every
 * decision's counts are absolute values read from the shared store, so the last one wins.
 */
export function rebuildFromJournals(
  journals: readonly string[],
  config: Config,
  warn: (message: string) => void,
): Rebuilt {
  const store = new MemoryStore<EventRecord>();
  const guard = new Guard(compilePolicy(config), store);
  const records: { ts: number; record: JournalRecord }[] = [];
  for (const journal of journals) {
    const files = journalFiles(journal);
    if (files.length === 0) throw new TrajgateError('E_INPUT_READ', `${journal}: no such journal`);
    files.forEach((file, n) => {
      let seen = 0;
      readJournal(
        file,
        (record, line) => {
          // The oldest file kept may start with a snapshot: the state before it.
          if (record.type === 'snapshot') {
            try {
              checkVersion(record.version);
            } catch (err) {
              throw new TrajgateError(
                'E_JOURNAL_CORRUPT',
                `${file}:${line}: ${(err as Error).message}`,
              );
            }
            if (n === 0 && seen === 0) restoreGuard(snapshotState(record.state), guard, store);
            return;
          }
          seen++;
          if (STATE.has(record.type)) records.push({ ts: Date.parse(record.ts), record });
        },
        warn,
        { repair: false },
      );
    });
  }
  records.sort((a, b) => a.ts - b.ts);
  for (const { record } of records) {
    applyRecord(guard, record);
    if (record.type === 'event') {
      store.remember(record.session, unchained(record), config.policy.recentEvents);
    }
  }
  return { store, guard, records: records.length };
}

/**
 * Writes a rebuilt trajectory into an empty store (or, with `force`, over what is there):
 * every session's state, its recent events, the operators' rules, and a new epoch, which tells
 * the gateways refusing decisions since the store came back empty to read it and go on.
 */
export async function writeRebuilt(
  redis: Redis,
  keys: StoreKeys,
  rebuilt: Rebuilt,
  force: boolean,
): Promise<{ sessions: number; rules: number }> {
  const known = await redis.exists(keys.sessions, keys.rules, keys.epoch);
  if (known > 0 && !force) {
    throw new TrajgateError(
      'E_USAGE',
      `the store under prefix ${JSON.stringify(keys.prefix)} is not empty: rebuild fills an empty one (--force writes over it)`,
    );
  }
  const { store, guard } = rebuilt;
  const batch = redis.multi();
  let sessions = 0;
  for (const [id, state] of store.sessions()) {
    sessions++;
    batch.set(keys.session(id), JSON.stringify({ v: 1, state: encodeSession(state) }));
    batch.zadd(keys.sessions, sessions, id);
    const recent = store.recent(id).map((r) => JSON.stringify(r));
    batch.del(keys.recent(id));
    if (recent.length > 0) batch.rpush(keys.recent(id), ...recent);
  }
  let rules = 0;
  batch.del(keys.rules);
  for (const a of guard.approvals.all(Date.now())) {
    if (a.origin !== 'operator') continue;
    rules++;
    const expiresAt = a.expiresAt === null ? null : new Date(a.expiresAt).toISOString();
    const { id, pattern, kind, session, by } = a;
    batch.hset(
      keys.rules,
      id,
      rule({ type: 'approve', id, session, pattern, kind, expiresAt, by }),
    );
  }
  for (const d of guard.denies.all(null, true)) {
    if (d.origin !== 'operator') continue;
    rules++;
    const { id, pattern, session, by } = d;
    batch.hset(
      keys.rules,
      id,
      rule(sharedSpelling({ type: 'deny-pattern', id, session, pattern, by })),
    );
  }
  // Gateways reload the operators' rules at their next decision (--force over a live store).
  batch.incr(keys.rulesVersion);
  batch.set(keys.epoch, `rebuilt:${Date.now()}`);
  const answers = await batch.exec();
  const failed = answers?.find(([err]) => err !== null)?.[0];
  if (failed)
    throw new TrajgateError('E_STORE_DOWN', `writing the rebuilt state: ${failed.message}`);
  return { sessions, rules };
}

/** An operator's rule as a journal record (what replication.ts reads back); by "rebuild". */
function rule(fields: Record<string, unknown>): string {
  return JSON.stringify({
    seq: 0,
    ts: new Date().toISOString(),
    ...fields,
    by: fields.by ?? 'rebuild',
  });
}
