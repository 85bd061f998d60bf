import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { TrajgateError } from '../../src/errors.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { openJournal } from '../../src/journal/open.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import { readJournal } from '../../src/journal/reader.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { eventRecord } from '../../src/journal/records.js';
import { JournalWriter } from '../../src/journal/writer.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir();
let n = 0;
const freshPath = () => join(tmp, `journal-${++n}.jsonl`);

function readAll(path: string, warnings: string[] = []): JournalRecord[] {
  const records: JournalRecord[] = [];
  readJournal(
    path,
    (r) => records.push(r),
    (w) => warnings.push(w),
  );
  return records;
}

const config = parseConfig(
  'version: 1\nworkspace: /tmp/agent-demo\nnetwork: { allow: ["pkg.example.com"] }\n',
  'test',
  tmp,
);

/** The gateway's order: normalise, judge, journal the decision, then act on it. */
function judge(
  guard: Guard,
  writer: JournalWriter,
  session: string,
  kind: string,
  target: string,
  ts: number,
) {
  const event = normalizeEvent(
    { kind, target },
    { session, source: 'proxy', ts, workspace: guard.policy.workspaceFor(session) },
  );
  const decision = guard.inspect(event);
  writer.append(eventRecord(event, decision), { ts, sync: decision.verdict === 'PAUSE' });
  guard.commit(session, ts, decision);
  return decision;
}

describe('journal writer and reader', () => {
  it('writes one JSON line per record, seq and ts first, and reads them back in order', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 100, now: () => 0 });
    w.append({ type: 'resume', session: 's', reset: false, by: 'op' });
    w.append({ type: 'resume', session: 't', reset: true, by: 'op' }, { ts: 86_400_000 });
    w.close();
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines[0]).toBe(
      `{"seq":1,"ts":"1970-01-01T00:00:00.000Z","prev":"${'0'.repeat(64)}","type":"resume","session":"s","reset":false,"by":"op"}`,
    );
    expect(lines[1]).toMatch(
      /^\{"seq":2,"ts":"1970-01-02T00:00:00.000Z","prev":"[0-9a-f]{64}","type":"resume"/,
    );
    expect(lines[2]).toBe('');
    const again = new JournalWriter(path, { lastSeq: 2, fsyncMs: 0 });
    again.append({ type: 'resume', session: 'u', reset: false, by: 'op' });
    again.close();
    expect(readAll(path).map((r) => r.seq)).toEqual([1, 2, 3]);
  });

  it('skips a torn last line with a warning, keeps its bytes aside and appends cleanly after', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 0 });
    w.append({ type: 'resume', session: 's', reset: false, by: 'op' });
    w.close();
    appendFileSync(path, '{"seq":2,"ts":"2026-01-01T00:00:00.000Z","type":"ev');
    const warnings: string[] = [];
    const { lastSeq } = readJournal(
      path,
      () => undefined,
      (m) => warnings.push(m),
    );
    expect(lastSeq).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/:2: last line was cut short by a crash/);
    const aside = /kept in (\S+)$/.exec(warnings[0] as string)?.[1] as string;
    expect(readFileSync(aside, 'utf8')).toContain('"type":"ev');
    const w2 = new JournalWriter(path, { lastSeq, fsyncMs: 0 });
    w2.append({ type: 'resume', session: 's', reset: false, by: 'op' });
    w2.close();
    expect(readAll(path).map((r) => r.seq)).toEqual([1, 2]);
  });

  it('keeps a complete last record that only lost its newline', () => {
    const path = freshPath();
    writeFileSync(
      path,
      '{"seq":1,"ts":"2026-01-01T00:00:00.000Z","type":"resume","session":"s","reset":false,"by":"x"}',
    );
    const warnings: string[] = [];
    expect(readAll(path, warnings)).toHaveLength(1);
    expect(warnings).toEqual([]);
    expect(readFileSync(path, 'utf8').endsWith('}\n')).toBe(true);
  });

  it.each([
    ['not JSON', 'garbage\n', 'not valid JSON'],
    ['an array', '[1,2]\n', 'not a JSON object'],
    ['no seq', '{"type":"event"}\n', 'a record needs a positive integer "seq"'],
  ])('refuses to start on a corrupt line that is %s, naming its line', (_, bad, why) => {
    const path = freshPath();
    writeFileSync(
      path,
      `{"seq":1,"ts":"x","type":"resume","session":"s","reset":false,"by":"x"}\n${bad}{"seq":3,"ts":"x","type":"x"}\n`,
    );
    let err: unknown;
    try {
      readAll(path);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrajgateError);
    expect((err as TrajgateError).code).toBe('E_JOURNAL_CORRUPT');
    expect((err as TrajgateError).message).toContain(`${path}:2: corrupt journal line (${why}`);
  });

  it('outcomes wait for the next record and share its write; file order is seq order', () => {
    const path = freshPath();
    let writes = 0;
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 100, onWrite: () => writes++ });
    const outcome = (rid: number) =>
      w.appendLater({
        type: 'outcome',
        rid,
        session: 's',
        status: 200,
        bytesUp: 0,
        bytesDown: 1,
        durationMs: 1,
      });
    expect([outcome(1), outcome(2)]).toEqual([1, 2]);
    expect(readFileSync(path, 'utf8')).toBe(''); // they decide nothing: not written yet
    expect(w.append({ type: 'resume', session: 's', reset: false, by: 'op' })).toBe(3);
    expect(writes).toBe(1);
    expect(readAll(path).map((r) => [r.seq, r.type])).toEqual([
      [1, 'outcome'],
      [2, 'outcome'],
      [3, 'resume'],
    ]);
    w.close();
  });

  it('writes long and non-ASCII records byte for byte (past the reused write buffer)', () => {
    const path = freshPath();
    const w = new JournalWriter(path, { lastSeq: 0, fsyncMs: 100 });
    const sessions = ['s-é-🙂', 'ü'.repeat(30_000), 'x'.repeat(70_000)];
    for (const session of sessions) w.append({ type: 'resume', session, reset: false, by: 'op' });
    w.close();
    expect(readAll(path).map((r) => (r as { session: string }).session)).toEqual(sessions);
  });

  it('a failed write throws E_JOURNAL_WRITE (the caller refuses)', () => {
    // /dev/full answers every write with ENOSPC: a disk that is full.
    const w = new JournalWriter('/dev/full', { lastSeq: 0, fsyncMs: 100 });
    expect(() => w.append({ type: 'resume', session: 's', reset: false, by: 'op' })).toThrow(
      expect.objectContaining({ code: 'E_JOURNAL_WRITE' }),
    );
  });
});

describe('restart: state is rebuilt from the journal', () => {
  it('gives the same next decision after dropping all process state', () => {
    const path = freshPath();
    const before = new Guard(compilePolicy(config));
    const first = openJournal(path, (r) => applyRecord(before, r), {
      fsyncMs: 100,
      warn: () => undefined,
    });
    judge(before, first.writer, 'a', 'command', '/tmp/agent-demo/tests', 1);
    judge(before, first.writer, 'a', 'network', 'https://example.test/api', 2);
    judge(before, first.writer, 'b', 'network', 'https://pkg.example.com/x', 3);
    judge(before, first.writer, 'c', 'write', '/etc/passwd', 4);
    first.writer.append({
      type: 'approve',
      session: 'b',
      pattern: 'example.test',
      kind: 'network',
      expiresAt: new Date(10).toISOString(),
      by: 'op',
    });
    before.approve({ pattern: 'example.test', session: 'b', expiresAt: 10 });
    first.writer.close();

    const after = new Guard(compilePolicy(config));
    const second = openJournal(path, (r) => applyRecord(after, r), {
      fsyncMs: 100,
      warn: () => undefined,
    });
    expect(second.restored).toBe(5);
    expect(second.writer.lastSeq).toBe(5);
    for (const s of ['a', 'b', 'c']) expect(after.session(s)).toEqual(before.session(s));
    // the next decisions match: a's second crossing pauses, b's approval holds until it expires
    for (const [session, target, ts] of [
      ['a', 'https://example.test/api', 5],
      ['b', 'https://example.test/', 6],
      ['b', 'https://example.test/', 11],
    ] as const) {
      const expected = judge(before, second.writer, session, 'network', target, ts);
      const actual = after.inspect(
        normalizeEvent(
          { kind: 'network', target },
          { session, source: 'proxy', ts, workspace: '/tmp/agent-demo' },
        ),
      );
      after.commit(session, ts, actual);
      expect(actual).toEqual(expected);
    }
    expect(after.session('a')?.pausedAt).toBe(5);
    expect(after.session('c')?.pausedAt).toBe(4);
    second.writer.close();
    expect(existsSync(path)).toBe(true);
  });
});
