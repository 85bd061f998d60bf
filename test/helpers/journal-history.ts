import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/load.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { MemoryStore } from '../../src/guard/store.js';
import { journalFiles } from '../../src/journal/files.js';
import { openJournal } from '../../src/journal/open.js';
import { readJournal } from '../../src/journal/reader.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { SessionIndex } from '../../src/journal/session-index.js';
import type { Pace } from '../../src/journal/snapshot-build.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import type { JournalWriter } from '../../src/journal/writer.js';
import { Denials } from '../../src/review/pause-ends.js';
import { Review } from '../../src/review/review.js';
import type { SnapshotState } from '../../src/review/snapshot.js';
import { captureState, restoreState, snapshotOptions } from '../../src/review/snapshot.js';
import { letBuild } from './snapshot.js';
import { secretThenEgress } from './rules.js';

/**
 * Histories made as the gateway makes them (decide, write, install) into a journal that
 * rotates, and the state they leave compared with a restart's and a full replay's
 * (journal-rotation and journal-snapshot-build tests).
 */
const log = pino({ level: 'silent' });
const WS = '/tmp/agent-demo';
export const SESSIONS = ['a', 'b', 'c', 'd', 'e', 'f'];

export function configFor(dir: string, journal: object | string): Config {
  const yaml = stringify({
    version: 1,
    workspace: WS,
    journal,
    network: { allow: ['docs.example.com'] },
    policy: {
      recentEvents: 5,
      sequences: [
        secretThenEgress(),
        {
          name: 'drift',
          after: { failed: true },
          then: { crossing: 'network' },
          within: '5 events',
          verdict: 'PAUSE',
        },
        { name: 'volume', volume: { up: '10KB', within: '10m' }, verdict: 'REVIEW' },
      ],
    },
  });
  // Written too, for the CLI (replay, verify) to read.
  writeFileSync(join(dir, 'trajgate.yaml'), yaml);
  return parseConfig(yaml, join(dir, 'trajgate.yaml'), dir);
}

export type Parts = ReturnType<typeof partsFor>;

export function partsFor(config: Config) {
  const store = new MemoryStore<EventRecord>();
  const guard = new Guard(compilePolicy(config), store);
  const review = new Review(config, log, store);
  const denials = new Denials();
  const index = new SessionIndex();
  return { store, guard, review, denials, index, recentEvents: config.policy.recentEvents };
}

export const applyTo = (p: Parts) => (r: JournalRecord) => {
  applyRecord(p.guard, r);
  p.review.restore(r);
};

/**
 * Opens the configured journal into `p` as the gateway does (snapshot, rotation); `pace`: how
 * snapshots are built (a session a slice drives a build through many records).
 */
export function open(
  config: Config,
  p: Parts,
  warn: (m: string) => void = () => undefined,
  pace?: Pace,
) {
  const { rotate, ...options } = snapshotOptions(config.journal, p, warn);
  return openJournal(config.journal.path, applyTo(p), {
    // Batched: syncing every record would make the test about the disk.
    fsyncMs: 60_000,
    warn,
    onAppend: (record, seq, offset, bytes) => {
      p.index.add(record, seq, offset, bytes);
      p.denials.observe(record, seq);
    },
    ...options,
    ...(rotate ? { rotate: { ...rotate, ...(pace ? { pace } : {}) } } : {}),
  });
}

/** A small deterministic random source. */
export function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

/**
 * `steps` actions as the gateway takes them: decisions (pausing ones with their pause record in
 * one write), outcomes written later, approvals with expiries, deny patterns, revokes, resumes,
 * denies and (`evict`) evictions, among `sessions`. Between them a snapshot build goes on (a
 * turn of the event loop, or until it is ready), so records land in the middle of builds.
 */
export async function history(
  w: JournalWriter,
  p: Parts,
  steps: number,
  seed = 1,
  { sessions = SESSIONS, evict = false }: { sessions?: readonly string[]; evict?: boolean } = {},
): Promise<void> {
  const rnd = random(seed);
  const turns = random(seed + 1000);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const last = new Map<string, number>();
  let ts = Date.parse('2026-01-01T00:00:00Z');
  const approvals: string[] = [];
  for (let i = 0; i < steps; i++) {
    await letBuild(w, turns());
    ts += 1000;
    const session = pick(sessions);
    const r = rnd();
    const paused = p.guard.session(session)?.pausedAt != null;
    if (evict && r < 0.04) {
      w.append({ type: 'evict', session, idleSince: w.iso(ts), reason: 'test' });
      p.guard.forget(session);
      p.review.forget(session);
      last.delete(session);
    } else if (r < 0.6) {
      const [kind, target] = pick([
        ['network', 'https://docs.example.com/x'],
        ['network', `https://api${Math.floor(rnd() * 3)}.test/v1`],
        ['read', '/home/u/.ssh/id_rsa'],
        ['write', '/etc/hosts'],
        ['read', `${WS}/src/a.ts`],
      ] as const);
      const event = normalizeEvent(
        { kind, target, ...(kind === 'network' ? { method: 'GET' } : {}) },
        { session, source: 'proxy', ts, workspace: WS },
      );
      const decision = p.guard.inspect(event);
      const record = eventRecord(event, decision, paused ? { held: true } : {});
      const stamped: EventRecord = { seq: w.lastSeq + 1, ts: w.iso(ts), ...record };
      const pause = decision.verdict === 'PAUSE' && !paused ? p.review.pauseFor(stamped, []) : null;
      if (pause) w.appendAll([record, { type: 'pause', ...pause }], ts);
      else w.append(record, { ts });
      p.guard.commit(session, ts, decision, { seq: stamped.seq, kind, target });
      p.review.observe(stamped, ts);
      if (pause) p.review.announce(pause);
      last.set(session, stamped.seq);
    } else if (r < 0.75 && last.has(session)) {
      const rid = last.get(session) as number;
      const failed = rnd() < 0.4;
      const bytesUp = Math.floor(rnd() * 4000);
      const outcome = { type: 'outcome', rid, session, status: failed ? 502 : 200 } as const;
      // Written later, as the gateway does: rides along with the next record (or a rotation).
      const fail = failed ? { failed: true as const } : {};
      w.appendLater({ ...outcome, bytesUp, bytesDown: 10, ...fail, durationMs: 3 }, ts);
      p.guard.outcome(session, rid, { failed, bytesUp, ts });
    } else if (r < 0.82) {
      const expiresAt = rnd() < 0.5 ? null : ts + 5000;
      const pattern = `api${Math.floor(rnd() * 3)}.test`;
      const scope = rnd() < 0.5 ? session : null;
      const seq = w.append({
        type: 'approve',
        session: scope,
        pattern,
        kind: 'network',
        expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
        by: 'op',
      });
      if (scope !== null) p.review.answered(scope);
      p.guard.approve({ pattern, session: scope, expiresAt, id: `a${seq}`, by: 'op' });
      approvals.push(`a${seq}`);
    } else if (r < 0.85) {
      const seq = w.append({ type: 'deny-pattern', session, pattern: 'evil.test', by: 'op' });
      p.guard.addDeny({ id: `d${seq}`, pattern: 'evil.test', session, by: 'op' });
      // As review/rules.ts: an operator acted on the session.
      p.review.answered(session);
    } else if (r < 0.87 && approvals.length > 0) {
      const id = approvals.shift() as string;
      w.append({ type: 'revoke', id, pattern: '-', kind: 'network', session: null, by: 'op' });
      p.guard.revoke(id);
    } else if (r < 0.95 && paused) {
      const reset = rnd() < 0.3;
      const keepMarks = rnd() < 0.3;
      w.append({ type: 'resume', session, reset, ...(keepMarks ? { keepMarks } : {}), by: 'op' });
      p.guard.resume(session, reset, keepMarks);
      p.review.resumed(session);
      p.review.answered(session);
    } else if (paused) {
      w.append({ type: 'deny', session, by: 'op', released: 0 });
      p.review.answered(session);
    }
  }
}

/** State after reading every file, oldest first, applying each line (no snapshot used). */
export function fullReplay(config: Config): Parts {
  const p = partsFor(config);
  journalFiles(config.journal.path).forEach((file, n) => {
    let seen = 0;
    readJournal(
      file,
      (r) => {
        // Only a first file left by `keep` starts from a snapshot; later ones repeat the lines.
        if (r.type === 'snapshot' && n === 0 && seen === 0) restoreState(r.state, p);
        seen++;
        if (r.type === 'snapshot') return;
        applyTo(p)(r);
        p.denials.observe(r, r.seq);
      },
      () => undefined,
      { repair: false },
    );
  });
  return p;
}

/** As JSON; `live`: pause records as a restart reads them back (held requests lost). */
export const json = (p: Parts, live = false) => {
  const state = JSON.parse(JSON.stringify(captureState(p))) as SnapshotState;
  if (live)
    for (const [, t] of state.trails)
      if (t.pause) (t.pause as { restored: boolean }).restored = true;
  return state;
};
export const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
/** A file's records: its lines less a snapshot's part lines (read as one with their head). */
export const recordsOf = (path: string) => linesOf(path).filter((l) => !isPart(l));
