import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listRotated, rotatedName, Segments } from '../../src/journal/files.js';
import type { RotateOptions } from '../../src/journal/rotate.js';
import { pruneRotated } from '../../src/journal/rotate-files.js';
import { Rotation } from '../../src/journal/rotate.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { fillDisk } from '../helpers/full-disk.js';
import { tempDir } from '../helpers/tmp.js';
import { fixedSnapshot } from '../helpers/snapshot.js';

/**
 * Rotation never deletes a rotated file younger than `journal.keepFor`
 * (its age: the time since its last write, its mtime), so `keep` is a soft count. Real files
 * in a temp folder, their mtimes set with utimesSync.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const NOW = Date.parse('2026-03-01T12:00:00Z');

/** A journal with rotated files 1..ages.length, file i last written `ages[i-1]` ms before `now`. */
function journal(ages: readonly number[], now = NOW): string {
  const path = join(tempDir(), 'journal.jsonl');
  writeFileSync(path, '');
  ages.forEach((age, i) => {
    const file = rotatedName(path, i + 1);
    writeFileSync(file, `{"n":${i + 1}}\n`);
    const at = (now - age) / 1000;
    utimesSync(file, at, at);
  });
  return path;
}

const left = (path: string) => listRotated(path).map((r) => r.n);

describe('pruneRotated with keepFor', () => {
  it('deletes files beyond keep only once older than keepFor; the younger ones stay', () => {
    const path = journal([9 * DAY, 8 * DAY, 6 * DAY, HOUR, 1]);
    const segments = Segments.scan(path);
    expect(pruneRotated(path, { keep: 1, keepFor: WEEK }, segments, NOW)).toBe(2);
    expect(left(path)).toEqual([3, 4, 5]);
    // The segments follow the files: the deleted ones' offsets are gone.
    expect(segments.list.map((s) => s.path)).toEqual([
      ...[3, 4, 5].map((n) => rotatedName(path, n)),
      path,
    ]);
  });

  it('keep still counts: files within it stay whatever their age', () => {
    const path = journal([30 * DAY, 20 * DAY, 10 * DAY]);
    expect(pruneRotated(path, { keep: 2, keepFor: WEEK }, Segments.scan(path), NOW)).toBe(0);
    expect(left(path)).toEqual([2, 3]);
  });

  it('a small keepFor: keep applies as before', () => {
    const path = journal([5_000, 4_000, 3_000, 2_000, 1_000]);
    expect(pruneRotated(path, { keep: 1, keepFor: 1 }, Segments.scan(path), NOW)).toBe(0);
    expect(left(path)).toEqual([5]);
  });

  it('keep: 0 with every file young deletes nothing; aged past keepFor, everything', () => {
    const path = journal([3 * DAY, 2 * DAY, DAY]);
    expect(pruneRotated(path, { keep: 0, keepFor: WEEK }, Segments.scan(path), NOW)).toBe(3);
    expect(left(path)).toEqual([1, 2, 3]);
    expect(pruneRotated(path, { keep: 0, keepFor: WEEK }, Segments.scan(path), NOW + WEEK)).toBe(0);
    expect(left(path)).toEqual([]);
  });

  it('only the oldest go, in order: a young file stops it (the kept files stay one chain)', () => {
    // File 1 was written to later than file 2 (touched by hand): nothing after it goes either.
    const path = journal([HOUR, 9 * DAY, 9 * DAY, 1]);
    expect(pruneRotated(path, { keep: 1, keepFor: WEEK }, Segments.scan(path), NOW)).toBe(3);
    expect(left(path)).toEqual([1, 2, 3, 4]);
  });

  it('the age is the last write, exactly: keepFor ms old may go, one ms less may not', () => {
    const path = journal([WEEK, WEEK - 1, 0]);
    expect(pruneRotated(path, { keep: 1, keepFor: WEEK }, Segments.scan(path), NOW)).toBe(1);
    expect(left(path)).toEqual([2, 3]);
  });
});

describe('out of space with every file younger than keepFor', () => {
  const options = (now: () => number): RotateOptions => ({
    bytes: 4096,
    keep: 1,
    keepFor: WEEK,
    snapshot: fixedSnapshot({}),
    now,
  });

  it('says why rotation cannot free space; once the files age past keepFor it frees it', () => {
    const path = journal([3 * DAY, 2 * DAY, DAY]);
    let now = NOW;
    const rotation = new Rotation(
      path,
      options(() => now),
    );
    expect(rotation.outOfSpace()).toBe(
      'rotation could not free space: the 2 rotated file(s) beyond journal.keep (1) are younger than journal.keepFor (7d) and are kept',
    );
    expect(left(path)).toEqual([1, 2, 3]);
    now += 5 * DAY;
    // File 1 is 8 days old now, file 2 seven: both may go.
    expect(rotation.outOfSpace()).toBeNull();
    expect(left(path)).toEqual([3]);
  });

  it('tries again at most once a second', () => {
    const path = journal([WEEK - 500, DAY]);
    let now = NOW;
    const rotation = new Rotation(
      path,
      options(() => now),
    );
    expect(rotation.outOfSpace()).toMatch(/the 1 rotated file\(s\) beyond/);
    // File 1 is past keepFor after 500 ms, but is looked at again only a second later.
    now += 999;
    expect(rotation.outOfSpace()).toMatch(/the 1 rotated file\(s\) beyond/);
    expect(left(path)).toEqual([1, 2]);
    now += 1;
    expect(rotation.outOfSpace()).toBeNull();
    expect(left(path)).toEqual([2]);
  });

  it('a journal without rotation, or with nothing held back, says nothing more', () => {
    const path = journal([DAY, DAY]);
    expect(new Rotation(path, undefined).outOfSpace()).toBeNull();
    const lenient = { ...options(() => NOW), keep: 5 };
    expect(new Rotation(path, lenient).outOfSpace()).toBeNull();
  });

  it('a full disk: the write fails closed, and the error and health name keepFor', () => {
    const path = journal([2 * DAY, DAY], Date.now());
    const failures: string[] = [];
    const health = { failed: (e: string) => failures.push(e), recovered: () => undefined };
    const writer = new JournalWriter(path, {
      lastSeq: 0,
      fsyncMs: 0,
      health,
      rotate: { ...options(Date.now), bytes: 1 << 20 },
    });
    writer.append({ type: 'deny', session: 's', by: 'op', released: 0 });
    const roomAgain = fillDisk(path);
    let message = '';
    try {
      writer.append({ type: 'deny', session: 's', by: 'op', released: 0 });
    } catch (err) {
      message = (err as Error).message;
    } finally {
      roomAgain();
    }
    expect(message).toMatch(/journal write failed: .*ENOSPC.*; rotation could not free space/);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(
      /ENOSPC.*the 1 rotated file\(s\) beyond journal\.keep \(1\) are younger than journal\.keepFor \(7d\)/,
    );
    expect(existsSync(rotatedName(path, 1))).toBe(true);
    writer.append({ type: 'deny', session: 's', by: 'op', released: 0 });
    writer.close();
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(2);
  });
});
