import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Once `append` returns, the record is in the kernel, whatever the fsync interval: a process
 * killed outright (no exit handlers, no flush) loses none. The writer runs in a child process,
 * from the dist/ that vitest's global setup keeps current.
 */
describe('journal writer killed mid-run', () => {
  it('loses no record when the writing process is killed with SIGKILL', () => {
    const path = join(tempDir(), 'journal.jsonl');
    const writer = join(import.meta.dirname, '../../dist/journal/writer.js');
    const script = `
      const { JournalWriter } = await import(${JSON.stringify(writer)});
      const w = new JournalWriter(${JSON.stringify(path)}, { lastSeq: 0, fsyncMs: 60000 });
      for (let i = 0; i < 500; i++) w.append({ type: 'resume', session: 's' + i, reset: false, by: 'op' });
      process.kill(process.pid, 'SIGKILL');`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script]);
    expect(child.signal).toBe('SIGKILL');
    const records: JournalRecord[] = [];
    readJournal(
      path,
      (r) => records.push(r),
      (w) => expect.unreachable(w),
    );
    expect(records).toHaveLength(500);
    expect(records.at(-1)).toMatchObject({ seq: 500, session: 's499' });
  });
});
