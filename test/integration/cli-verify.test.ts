import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { JournalWriter } from '../../src/journal/writer.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir();
let n = 0;

/** A journal of `records` deny records written by the writer, chained; `lastSeq` continues one. */
function journal(records: number, options: { lastSeq?: number; prev?: string } = {}): string {
  const path = join(tmp, `journal-${++n}.jsonl`);
  const w = new JournalWriter(path, { lastSeq: options.lastSeq ?? 0, fsyncMs: 0, ...options });
  for (let i = 0; i < records; i++)
    w.append({ type: 'deny', session: `agent-${i}`, by: 'test', released: i });
  w.close();
  return path;
}

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
const write = (path: string, ls: readonly string[], end = '\n') =>
  writeFileSync(path, ls.join('\n') + end);
const prevOf = (line: string) => (JSON.parse(line) as { prev: string }).prev;

describe('trajgate verify', () => {
  it('an intact journal → exit 0, the count; the configured one by default', () => {
    const path = journal(8);
    const r = runCli(['verify', path]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('ok: 8 records, chain intact\n');
    const config = join(tmp, 'verify.yaml');
    writeFileSync(config, stringify({ version: 1, workspace: tmp, journal: path }));
    expect(runCli(['verify', '--config', config]).stdout).toBe('ok: 8 records, chain intact\n');
  });

  it('an edited middle line → exit 1 naming the next line, whose prev no longer matches', () => {
    const path = journal(8);
    const ls = lines(path);
    ls[4] = (ls[4] as string).replace('"released":4', '"released":0');
    write(path, ls);
    const r = runCli(['verify', path]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `trajgate: ${path}:6: prev does not match line 5 (edited, removed or inserted)\n`,
    );
  });

  it('a deleted middle line → exit 1 naming the line that now follows the gap', () => {
    const path = journal(8);
    const ls = lines(path);
    ls.splice(3, 1);
    write(path, ls);
    const r = runCli(['verify', path]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${path}:4: prev does not match line 3`);
  });

  it('a deleted first line → the new first line does not start a chain', () => {
    const path = journal(3);
    write(path, lines(path).slice(1));
    const r = runCli(['verify', path]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${path}:1: prev is not 64 zeros`);
  });

  it('a torn last line → exit 0 with a warning naming it: a crash leaves one', () => {
    const path = journal(5);
    const ls = lines(path);
    ls[4] = (ls[4] as string).slice(0, 30);
    write(path, ls, '');
    const r = runCli(['verify', path]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(
      `trajgate: warning: ${path}:5: torn last line (30 bytes cut short by a crash); the chain before it is intact, and trajgate start moves it aside\n`,
    );
    expect(r.stdout).toBe('ok: 4 records, chain intact\n');
  });

  it('a line without prev → exit 1 naming it', () => {
    const path = journal(3);
    const ls = lines(path);
    ls[1] = (ls[1] as string).replace(/"prev":"[0-9a-f]{64}",/, '');
    write(path, ls);
    const r = runCli(['verify', path]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${path}:2: no prev (written before the chain, or edited)`);
  });

  it('two files in order chain across; out of order, the second names the first', () => {
    const first = journal(4);
    const last = lines(first).at(-1) as string;
    const second = journal(3, {
      lastSeq: 4,
      prev: createHash('sha256').update(last).digest('hex'),
    });
    expect(prevOf(lines(second)[0] as string)).not.toBe('0'.repeat(64));
    const ok = runCli(['verify', first, second]);
    expect(ok.stdout).toBe('ok: 7 records in 2 files, chain intact\n');
    expect(ok.status).toBe(0);
    const other = journal(2);
    const bad = runCli(['verify', other, second]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`${second}:1: prev does not match the last line of ${other}`);
  });

  it('a missing file → exit 1; a bad option → usage, exit 2', () => {
    const r = runCli(['verify', join(tmp, 'nope.jsonl')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `ENOENT: cannot read ${join(tmp, 'nope.jsonl')}: no such file or folder; check the path`,
    );
    expect(runCli(['verify', '--bogus']).status).toBe(2);
  });
});
