import { closeSync, existsSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataHome } from '../../src/config/load.js';
import { isTrajgateError } from '../../src/errors.js';
import { digestOf } from '../../src/journal/chain.js';
import { journalFiles, listRotated } from '../../src/journal/files.js';
import { eachLine } from '../../src/journal/reader.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import { captureState } from '../../src/review/snapshot.js';
import { chainFiles, verifyChain } from '../../src/journal/verify.js';
import {
  configFor,
  fullReplay,
  history,
  json,
  linesOf,
  open,
  partsFor,
  recordsOf,
} from '../helpers/journal-history.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Rotation with snapshots. A history is made as the gateway makes it (decide,
 * write, install), rotating every few KiB; a restart from the live file's snapshot and the
 * lines after it must end in the state a replay of every file gives.
 */

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
