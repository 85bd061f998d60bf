import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { dataHome, parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/load.js';
import { isTrajgateError } from '../../src/errors.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { MemoryStore } from '../../src/guard/store.js';
import { digestOf } from '../../src/journal/chain.js';
import { journalFiles, listRotated } from '../../src/journal/files.js';
import { openJournal } from '../../src/journal/open.js';
import { eachLine, readJournal } from '../../src/journal/reader.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { SessionIndex } from '../../src/journal/session-index.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import type { SnapshotState } from '../../src/review/snapshot.js';
import { captureState, restoreState, snapshotOptions } from '../../src/review/snapshot.js';
import { chainFiles, verifyChain } from '../../src/journal/verify.js';
import type { JournalWriter } from '../../src/journal/writer.js';
import { Denials } from '../../src/review/pause-ends.js';
import { Review } from '../../src/review/review.js';
import { letBuild } from '../helpers/snapshot.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Rotation with snapshots. A history is made as the gateway makes it (decide,
 * write, install), rotating every few KiB; a restart from the live file's snapshot and the
 * lines after it must end in the state a replay of every file gives.
 */
const log = pino({ level: 'silent' });
const WS = '/tmp/agent-demo';
const SESSIONS = ['a', 'b', 'c', 'd', 'e', 'f'];

function configFor(dir: string, journal: object | string): Config {
  const yaml = stringify({
    version: 1,
    workspace: WS,
    journal,
    network: { allow: ['docs.example.com'] },
    policy: {
      recentEvents: 5,
      sequences: [
        {
          name: 'secret-then-egress',
          after: { kind: 'read', target: ['**/.ssh/**'] },
          then: { kind: 'network' },
          within: '1h',
          verdict: 'PAUSE',
        },
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
  return parseConfig(yaml, join(dir, 'trajgate.yaml'), dir);
}

type Parts = ReturnType<typeof partsFor>;

function partsFor(config: Config) {
  const store = new MemoryStore<EventRecord>();
  const guard = new Guard(compilePolicy(config), store);
  const review = new Review(config, log, store);
  const denials = new Denials();
  const index = new SessionIndex();
  return { store, guard, review, denials, index, recentEvents: config.policy.recentEvents };
}

const applyTo = (p: Parts) => (r: JournalRecord) => {
  applyRecord(p.guard, r);
  p.review.restore(r);
};

/** Opens the configured journal into `p` as the gateway does (snapshot, rotation). */
function open(config: Config, p: Parts, warn: (m: string) => void = () => undefined) {
  return openJournal(config.journal.path, applyTo(p), {
    // Batched: syncing every record would make the test about the disk.
    fsyncMs: 60_000,
    warn,
    onAppend: (record, seq, offset, bytes) => {
      p.index.add(record, seq, offset, bytes);
      p.denials.observe(record, seq);
    },
    ...snapshotOptions(config.journal, p, warn),
  });
}

/** A small deterministic random source. */
function random(seed: number): () => number {
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
async function history(
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
function fullReplay(config: Config): Parts {
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
const json = (p: Parts, live = false) => {
  const state = JSON.parse(JSON.stringify(captureState(p))) as SnapshotState;
  if (live)
    for (const [, t] of state.trails)
      if (t.pause) (t.pause as { restored: boolean }).restored = true;
  return state;
};
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
/** A file's records: its lines less a snapshot's part lines (read as one with their head). */
const recordsOf = (path: string) => linesOf(path).filter((l) => !isPart(l));

describe('journal rotation with snapshots', () => {
  it('a restart from the newest snapshot and the lines after it equals a full replay', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './j/journal.jsonl', rotate: 16384, keep: 100_000 });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 2500);
    writer.close();
    const rotated = listRotated(config.journal.path);
    expect(rotated.length).toBeGreaterThan(10);
    // Each rotated-to file begins with a snapshot (parts, then their head) chained from the
    // previous file's last line.
    const files = journalFiles(config.journal.path);
    for (let i = 1; i < files.length; i++) {
      const first = JSON.parse(recordsOf(files[i] as string)[0] as string) as Record<
        string,
        unknown
      >;
      const parts = linesOf(files[i] as string).length - recordsOf(files[i] as string).length;
      expect(first).toMatchObject({ type: 'snapshot', version: 2, parts });
      expect(parts).toBeGreaterThan(0);
      expect(first.prev).toBe(digestOf(linesOf(files[i - 1] as string).at(-1) as string));
    }
    expect(verifyChain(chainFiles(config.journal.path)).records).toBe(
      files.reduce((n, f) => n + recordsOf(f).length, 0),
    );
    const full = fullReplay(config);
    const restarted = partsFor(config);
    const { writer: again, restored } = open(config, restarted);
    again.close();
    // Only the live file was read.
    expect(restored).toBe(recordsOf(config.journal.path).length);
    const state = json(full);
    expect(json(restarted)).toEqual(state);
    expect(json(live, true)).toEqual(state);
    // Something worth comparing: paused sessions, counts, marks, approvals, denies, trails.
    const s = captureState(full);
    expect(s.sessions.some(([, x]) => x.pausedAt !== null)).toBe(true);
    expect(s.sessions.some(([, x]) => x.marks.length > 0)).toBe(true);
    expect(s.sessions.some(([, x]) => x.sent.length > 0)).toBe(true);
    expect(s.approvals.length).toBeGreaterThan(0);
    expect(s.denies.length).toBeGreaterThan(0);
    expect(s.denials.length).toBeGreaterThan(0);
    expect(s.recent.every(([, r]) => r.length <= 5)).toBe(true);
  });

  it('every rotation point gives the same state as a full replay', async () => {
    // Rotations land after every kind of record: compare at many cut points.
    for (const seed of [2, 3, 4, 5, 6, 7, 8, 9]) {
      const dir = tempDir();
      const config = configFor(dir, { path: './journal.jsonl', rotate: 4096, keep: 100_000 });
      const live = partsFor(config);
      const { writer } = open(config, live);
      await history(writer, live, 200 + seed * 37, seed);
      writer.close();
      expect(listRotated(config.journal.path).length).toBeGreaterThan(2);
      const restarted = partsFor(config);
      open(config, restarted).writer.close();
      expect(json(restarted)).toEqual(json(fullReplay(config)));
    }
  });

  it('keep: rotated files beyond it are deleted, oldest first; verify starts at the oldest kept', async () => {
    const dir = tempDir();
    // keepFor: 0ms, so that files of this one instant may go (journal-keep-for.test.ts).
    const journal = { path: './journal.jsonl', rotate: 4096, keep: 3, keepFor: '0ms' };
    const config = configFor(dir, journal);
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 600);
    writer.close();
    const rotated = listRotated(config.journal.path);
    expect(rotated.map((r) => r.n)).toEqual(
      [3, 2, 1].map((k) => (rotated.at(-1) as { n: number }).n + 1 - k),
    );
    expect(rotated[0]?.n).toBeGreaterThan(1);
    expect(verifyChain(chainFiles(config.journal.path)).records).toBeGreaterThan(0);
    // The restart still reads only the live file, and replay from the oldest kept snapshot on
    // gives the same state.
    const restarted = partsFor(config);
    open(config, restarted).writer.close();
    expect(json(restarted)).toEqual(json(live, true));
    expect(json(restarted)).toEqual(json(fullReplay(config)));
  });

  it('chain: false writes no prev, snapshots included; verify says the file carries no chain', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096, chain: false });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 200);
    writer.close();
    for (const file of journalFiles(config.journal.path))
      for (const line of linesOf(file)) expect(line).not.toContain('"prev"');
    // The head is the file's first record: its part lines come before it.
    const head = linesOf(config.journal.path).findIndex((l) => !isPart(l)) + 1;
    expect(() => verifyChain([config.journal.path])).toThrow(`:${head}: carries no chain`);
    const restarted = partsFor(config);
    open(config, restarted).writer.close();
    expect(json(restarted)).toEqual(json(fullReplay(config)));
  });

  it('a snapshot of an unknown version → E_JOURNAL_CORRUPT naming file:line and version', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096 });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 200);
    writer.close();
    const path = config.journal.path;
    const ls = linesOf(path);
    const head = ls.findIndex((l) => !isPart(l));
    ls[head] = (ls[head] as string).replace('"version":2,', '"version":7,');
    writeFileSync(path, ls.join('\n') + '\n');
    let error: unknown;
    try {
      open(config, partsFor(config));
    } catch (err) {
      error = err;
    }
    expect(isTrajgateError(error) && error.code).toBe('E_JOURNAL_CORRUPT');
    expect((error as Error).message).toMatch(
      new RegExp(
        `^${path.replace(/[.]/g, '\\.')}:${head + 1}: snapshot version 7 is not one this trajgate reads \\(1, 2\\)`,
      ),
    );
  });

  it('a crash between the renames: the prepared file becomes the live one at start', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096 });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 300);
    writer.close();
    const path = config.journal.path;
    // As if the live file had been renamed and the process died before `.next` took its name.
    renameSync(path, `${path}.next`);
    const restarted = partsFor(config);
    open(config, restarted).writer.close();
    expect(existsSync(`${path}.next`)).toBe(false);
    expect(json(restarted)).toEqual(json(live, true));
    expect(verifyChain(chainFiles(path)).torn).toBeNull();
  });

  it('lines longer than a read (a snapshot of megabytes) come whole, with their offsets', () => {
    const dir = tempDir();
    const path = join(dir, 'long.jsonl');
    const long = 'x'.repeat(3_500_000);
    const lines = ['a', long, 'b', `c${long}`, '', 'd'];
    writeFileSync(path, lines.join('\n') + `\n${long}`);
    const seen: [string, number, boolean][] = [];
    const fd = openSync(path, 'r');
    eachLine(fd, (bytes, offset, whole) => seen.push([bytes.toString(), offset, whole]));
    closeSync(fd);
    let at = 0;
    const expected = [...lines, long].map((l, i): [string, number, boolean] => {
      const e: [string, number, boolean] = [l, at, i < lines.length];
      at += l.length + 1;
      return e;
    });
    expect(seen.map(([l, o, w]) => [l.length, o, w])).toEqual(
      expected.map(([l, o, w]) => [l.length, o, w]),
    );
    expect(seen.map(([l]) => l)).toEqual(expected.map(([l]) => l));
  });

  it('config: the string form stays valid; a bad key is named', () => {
    const dir = tempDir();
    expect(configFor(dir, './x.jsonl').journal).toEqual({
      path: join(dir, 'x.jsonl'),
      rotate: 0,
      keep: 20,
      keepFor: 7 * 86_400_000,
      chain: true,
    });
    expect(configFor(dir, { rotate: '64MB', keep: 3, keepFor: '36h' }).journal).toEqual({
      // No path: the journal in trajgate's data folder, never beside the config.
      path: join(dataHome(dir), 'journal.jsonl'),
      rotate: 64_000_000,
      keep: 3,
      keepFor: 36 * 3_600_000,
      chain: true,
    });
    expect(configFor(dir, { path: './y.jsonl', rotate: '1MiB' }).journal.rotate).toBe(1 << 20);
    const bad = (journal: object) => {
      try {
        configFor(dir, journal);
      } catch (err) {
        return (err as { details?: string[] }).details?.join('\n') ?? String(err);
      }
      return 'no error';
    };
    expect(bad({ rotate: 'lots' })).toMatch(
      /journal\.rotate: .*expected 0 \(no rotation\) or a size/,
    );
    expect(bad({ rotate: 100 })).toMatch(/journal\.rotate: /);
    expect(bad({ keep: -1 })).toMatch(/journal\.keep: /);
    expect(bad({ keepFor: 'a week' })).toMatch(/journal\.keepFor: .*expected a duration/);
    expect(bad({ keepFor: 7 })).toMatch(/journal\.keepFor: /);
    expect(bad({ chain: 'no' })).toMatch(/journal\.chain: /);
    expect(bad({ rotat: 1 })).toMatch(/journal\.rotat.*unknown key/);
  });
});
