import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openJournal } from '../../src/journal/open.js';
import type { DenyRecord, Unstamped } from '../../src/journal/records.js';
import { verifyChain } from '../../src/journal/verify.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { fillDisk } from '../helpers/full-disk.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir();
let n = 0;
const freshPath = () => join(tmp, `chain-${++n}.jsonl`);
const ZEROS = '0'.repeat(64);
/** Computed apart from src/journal/chain.ts. */
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const deny = (session: string): Unstamped<DenyRecord> => ({
  type: 'deny',
  session,
  by: 'test',
  released: 0,
});
const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

/** Every line's prev is the digest of the line before it; the first one's is 64 zeros. */
function expectChain(lines: readonly string[]): void {
  lines.forEach((line, i) => {
    const r = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(r).slice(0, 3)).toEqual(['seq', 'ts', 'prev']);
    expect(r.prev).toBe(i === 0 ? ZEROS : sha256(lines[i - 1] as string));
  });
}

const reopen = (path: string, warn: (m: string) => void = () => {}) =>
  openJournal(path, () => {}, { fsyncMs: 0, warn }).writer;

describe('journal hash chain', () => {
  it('the writer chains every line: append, appendLater and appendAll', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 0 });
    w.append(deny('a'));
    w.appendLater(deny('b'));
    w.append(deny('ü ☃ multibyte'));
    w.appendAll([deny('c'), deny('d')]);
    w.close();
    const lines = linesOf(path);
    expect(lines).toHaveLength(5);
    expectChain(lines);
    expect(verifyChain([path]).records).toBe(5);
  });

  it('after a reopen the chain continues from the last line', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 0 });
    w.append(deny('a'));
    w.append(deny('b'));
    w.close();
    const again = reopen(path);
    again.append(deny('c'));
    again.close();
    const lines = linesOf(path);
    expect(lines).toHaveLength(3);
    expectChain(lines);
    expect((JSON.parse(lines[2] as string) as { prev: string }).prev).toBe(sha256(lines[1]!));
  });

  it('a torn last line is moved aside: the chain continues from the last whole line', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 0 });
    w.append(deny('a'));
    w.append(deny('b'));
    w.close();
    appendFileSync(path, '{"seq":3,"ts":"2026-');
    const warnings: string[] = [];
    const again = reopen(path, (m) => warnings.push(m));
    again.append(deny('c'));
    again.close();
    expect(warnings.join('\n')).toContain('cut short');
    const lines = linesOf(path);
    expect(lines).toHaveLength(3);
    expectChain(lines);
    expect(verifyChain([path]).records).toBe(3);
  });

  it('a failed write (full disk) leaves no gap: the next line follows the last one written', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 0 });
    w.append(deny('a'));
    const refill = fillDisk(path);
    w.appendLater(deny('lost with the write'));
    expect(() => w.append(deny('refused'))).toThrow(/journal write failed/);
    refill();
    w.append(deny('b'));
    w.close();
    const lines = linesOf(path);
    expect(lines).toHaveLength(2);
    expectChain(lines);
    expect(verifyChain([path]).records).toBe(2);
  });

  it('a new, empty journal starts the chain at 64 zeros', () => {
    const path = freshPath();
    const w = reopen(path);
    w.append(deny('a'));
    w.close();
    expectChain(linesOf(path));
    expect(verifyChain([path]).records).toBe(1);
  });
});
