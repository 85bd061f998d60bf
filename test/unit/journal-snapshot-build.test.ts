import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { isTrajgateError } from '../../src/errors.js';
import { digestOf } from '../../src/journal/chain.js';
import { journalFiles, listRotated, rotatedName } from '../../src/journal/files.js';
import { nextName } from '../../src/journal/rotate-files.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import { chainFiles, verifyChain } from '../../src/journal/verify.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { captureState } from '../../src/review/snapshot.js';
import { rebuildFromJournals } from '../../src/state/rebuild.js';
import {
  configFor,
  fullReplay,
  history,
  json,
  linesOf,
  open,
  partsFor,
} from '../helpers/journal-history.js';
import { runCliAsync } from '../helpers/cli.js';
import { fixedSnapshot } from '../helpers/snapshot.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Version 2 snapshots, built a slice at a time while records go on: what a restart reads back
 * equals a full replay whatever happened during the build; verify and start see an edited or
 * removed part line; version 1 journals still start; rotation counts records, not the snapshot.
 */
const SLOW = { sliceMs: 0, settle: 0 };
const many = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);

/** The error `f` throws. */
function thrown(f: () => unknown): Error & { code?: string } {
  try {
    f();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('nothing thrown');
}

/** Each file's part lines: [session, gone] in order. */
const partsIn = (file: string) =>
  linesOf(file)
    .filter((l) => isPart(l))
    .map((l) => JSON.parse(l) as { session: string; gone?: true });

describe('snapshots built while records go on', () => {
  it('sessions created, changed and evicted during a build: a restart equals a full replay', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 8192, keep: 100_000 });
    const live = partsFor(config);
    // A session a slice: every build spans many records.
    const { writer } = open(config, live, undefined, SLOW);
    await history(writer, live, 3000, 11, { sessions: many(60), evict: true });
    writer.close();
    const files = journalFiles(config.journal.path);
    expect(files.length).toBeGreaterThan(4);
    // Sessions were written again after changing (a later part), and evicted after their part.
    const rewritten = files.slice(1).filter((f) => {
      const ids = partsIn(f).map((p) => p.session);
      return new Set(ids).size < ids.length;
    });
    expect(rewritten.length).toBeGreaterThan(0);
    expect(files.some((f) => partsIn(f).some((p) => p.gone === true))).toBe(true);
    expect(verifyChain(chainFiles(config.journal.path)).torn).toBeNull();
    const restarted = partsFor(config);
    open(config, restarted).writer.close();
    const state = json(fullReplay(config));
    expect(json(restarted)).toEqual(state);
    expect(json(live, true)).toEqual(state);
    expect(state.sessions.length).toBeGreaterThan(10);
  });

  it('a crash mid-build leaves <journal>.next beside the live file: dropped, and the restart is right', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096, keep: 100_000 });
    const live = partsFor(config);
    const { writer } = open(config, live, undefined, SLOW);
    await history(writer, live, 400, 5, { sessions: many(40) });
    // Records until a build is under way and has written parts.
    const next = nextName(config.journal.path);
    for (let seed = 6; !existsSync(next) || writer.building === null; seed++)
      await history(writer, live, 20, seed, { sessions: many(40) });
    // One turn at least: the outcomes written later are in the file too.
    do await nextTurn();
    while (statSync(next).size === 0);
    expect(writer.building).not.toBeNull();
    // As the disk holds it at a kill -9 now: page cache and all.
    const crashed = tempDir();
    cpSync(dir, crashed, { recursive: true });
    const expected = json(live, true);
    writer.close();
    const copy = configFor(crashed, { path: './journal.jsonl', rotate: 4096, keep: 100_000 });
    expect(existsSync(nextName(copy.journal.path))).toBe(true);
    const restarted = partsFor(copy);
    open(copy, restarted).writer.close();
    expect(existsSync(nextName(copy.journal.path))).toBe(false);
    expect(json(restarted)).toEqual(expected);
    expect(json(restarted)).toEqual(json(fullReplay(copy)));
    // The writer dropped its build on close (once the write in flight returned).
    await waitFor(() => !existsSync(next), 20_000, 'the dropped build removing its .next');
  });

  it('verify and start refuse a snapshot whose part line was edited or removed', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096 });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 300, 3, { sessions: many(12) });
    writer.close();
    const path = config.journal.path;
    const intact = readFileSync(path, 'utf8');
    const ls = linesOf(path);
    const head = ls.findIndex((l) => !isPart(l));
    expect(head).toBeGreaterThan(2);
    const refused = (line: number, why: RegExp) => {
      const chain = thrown(() => verifyChain(chainFiles(path)));
      expect([chain.code, chain.message]).toEqual(['E_CHAIN_BROKEN', expect.stringMatching(why)]);
      expect(chain.message.startsWith(`${path}:${line}: `)).toBe(true);
      const start = thrown(() => open(config, partsFor(config)));
      expect(isTrajgateError(start) && start.code).toBe('E_JOURNAL_CORRUPT');
      expect(start.message).toMatch(why);
      expect(start.message.startsWith(`${path}:${line}: `)).toBe(true);
    };
    const edited = [...ls];
    edited[1] = (edited[1] as string).replace(/"lastActivity":(\d)/, '"lastActivity":9$1');
    expect(edited[1]).not.toBe(ls[1]);
    writeFileSync(path, edited.join('\n') + '\n');
    refused(head + 1, /part lines do not match its head's digest/);
    const removed = ls.filter((_, i) => i !== 1);
    writeFileSync(path, removed.join('\n') + '\n');
    refused(head, new RegExp(`head counts ${head} part line\\(s\\), ${head - 1} precede it`));
    // Cut after the parts (no head): neither verify nor start takes them for a snapshot.
    writeFileSync(path, ls.slice(0, head).join('\n') + '\n');
    refused(head, /snapshot part lines (not followed by|without) their head/);
    writeFileSync(path, intact);
    expect(verifyChain(chainFiles(path)).torn).toBeNull();
  });

  it('a version 1 journal (one-line snapshot) still starts, then rotates on in version 2', async () => {
    const dir = tempDir();
    const config = configFor(dir, { path: './journal.jsonl', rotate: 4096, keep: 100_000 });
    // Written by an older trajgate: records, rotated, and a live file starting with a snapshot.
    const old = partsFor(configFor(dir, { path: './old.jsonl' }));
    const { writer: first } = open(configFor(dir, { path: './old.jsonl' }), old);
    await history(first, old, 300, 4);
    first.close();
    const before = linesOf(join(dir, 'old.jsonl'));
    const { seq, ts } = JSON.parse(before.at(-1) as string) as { seq: number; ts: string };
    const prev = digestOf(before.at(-1) as string);
    const state = JSON.stringify(captureState(old));
    const v1 = `{"seq":${seq},"ts":"${ts}","prev":"${prev}","type":"snapshot","version":1,"state":${state}}`;
    renameSync(join(dir, 'old.jsonl'), rotatedName(config.journal.path, 1));
    writeFileSync(config.journal.path, v1 + '\n');
    expect(verifyChain(chainFiles(config.journal.path)).records).toBe(before.length + 1);
    const live = partsFor(config);
    const { writer } = open(config, live);
    expect(json(live)).toEqual(json(old, true));
    await history(writer, live, 300, 5);
    writer.close();
    expect(listRotated(config.journal.path).length).toBeGreaterThan(2);
    const restarted = partsFor(config);
    open(config, restarted).writer.close();
    expect(json(restarted)).toEqual(json(fullReplay(config)));
    expect(verifyChain(chainFiles(config.journal.path)).torn).toBeNull();
  });

  it('rotates at `rotate` bytes of records beyond a snapshot larger than `rotate`', async () => {
    const dir = tempDir();
    const rotate = 256 << 10;
    const config = configFor(dir, { path: './journal.jsonl', rotate, keep: 100_000 });
    const live = partsFor(config);
    const { writer } = open(config, live);
    await history(writer, live, 6000, 8, { sessions: many(2500) });
    writer.close();
    const sizes = journalFiles(config.journal.path)
      .slice(1)
      .map((file) => {
        const ls = linesOf(file);
        const head = ls.findIndex((l) => !isPart(l));
        const snapshot = ls.slice(0, head + 1).reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
        return { snapshot, size: statSync(file).size, rotated: file !== config.journal.path };
      });
    const large = sizes.filter((s) => s.rotated && s.snapshot > rotate);
    expect(large.length).toBeGreaterThan(1);
    for (const { snapshot, size } of large) {
      // Records written while the next snapshot was built come on top (a few KiB here).
      expect(size - snapshot).toBeGreaterThanOrEqual(rotate);
      expect(size - snapshot).toBeLessThan(rotate + (128 << 10));
      // The rule before: at least twice the snapshot.
      expect(size).toBeLessThan(2 * snapshot);
    }
  });
});

/** A journal whose older files `keep` deleted: the oldest kept one starts with a snapshot. */
async function keptFromSnapshot() {
  const dir = tempDir();
  const journal = { path: './journal.jsonl', rotate: 4096, keep: 1, keepFor: '0ms' };
  const config = configFor(dir, journal);
  const live = partsFor(config);
  const { writer } = open(config, live);
  await history(writer, live, 400, 9, { sessions: many(30) });
  writer.close();
  const [oldest] = journalFiles(config.journal.path);
  expect(partsIn(oldest as string).length).toBeGreaterThan(0);
  return { dir, config, live };
}

describe('state rebuild from a journal whose oldest kept file starts with a version 2 snapshot', () => {
  it('restores the sessions only that snapshot holds', async () => {
    const { config, live } = await keptFromSnapshot();
    const rebuilt = rebuildFromJournals([config.journal.path], config, () => undefined);
    const events = (sessions: Iterable<[string, { events: number }]>) =>
      new Map([...sessions].map(([id, s]) => [id, s.events]));
    expect(events(rebuilt.guard.sessions())).toEqual(events(live.guard.sessions()));
  });
});

describe('trajgate replay from a version 2 snapshot in the oldest kept file', () => {
  it('judges every event of the kept files; a part line edited → E_JOURNAL_CORRUPT naming it', async () => {
    const { dir, config } = await keptFromSnapshot();
    const files = journalFiles(config.journal.path);
    const args = ['replay', config.journal.path, '--config', join(dir, 'trajgate.yaml')];
    const replayed = await runCliAsync(args);
    expect([replayed.status, replayed.stderr]).toEqual([0, '']);
    const judged = files
      .flatMap((f) => linesOf(f).filter((l) => !isPart(l)))
      .map((l) => JSON.parse(l) as { type: string; held?: boolean })
      .filter((r) => r.type === 'event' && r.held !== true);
    expect(replayed.stdout.trim().split('\n')).toHaveLength(judged.length);
    const ls = linesOf(files[0] as string);
    const head = ls.findIndex((l) => !isPart(l));
    ls[0] = (ls[0] as string).replace(/"events":(\d)/, '"events":9$1');
    writeFileSync(files[0] as string, ls.join('\n') + '\n');
    const edited = await runCliAsync(args);
    expect(edited.status).not.toBe(0);
    expect(edited.stderr).toContain(
      `${files[0]}:${head + 1}: the snapshot's part lines do not match its head's digest`,
    );
  });
});

describe('a snapshot build that fails', () => {
  it('is told, the journal goes on in the same file, and rotation is tried again 1 MiB later', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.jsonl');
    const warned: string[] = [];
    const snapshot = fixedSnapshot({ note: 'test' });
    const rotate = {
      bytes: 4096,
      keep: 100,
      keepFor: 0,
      snapshot,
      warn: (m: string) => warned.push(m),
    };
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 60_000, rotate });
    // `.next` cannot be created: a folder has its name.
    mkdirSync(nextName(path));
    const deny = (i: number) => w.append({ type: 'deny', session: `s${i}`, by: 't', released: i });
    let i = 0;
    for (; warned.length === 0; i++) {
      deny(i);
      await w.building;
    }
    expect(warned[0]).toMatch(
      /^.*journal\.jsonl: rotation failed, the journal goes on in the same file: /,
    );
    const failedAt = statSync(path).size;
    rmdirSync(nextName(path));
    // No build starts before then (one would be ready at the next await).
    for (; statSync(path).size < failedAt + (1 << 20) - 200; i++) {
      deny(i);
      await w.building;
    }
    expect(listRotated(path)).toEqual([]);
    for (; listRotated(path).length === 0; i++) {
      deny(i);
      await w.building;
    }
    w.close();
    expect(warned).toHaveLength(1);
    expect(statSync(listRotated(path)[0]!.path).size).toBeGreaterThanOrEqual(failedAt + (1 << 20));
    expect(verifyChain(chainFiles(path)).torn).toBeNull();
  });
});
