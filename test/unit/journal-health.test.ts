import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JournalHealth } from '../../src/journal/health.js';
import { JournalWriter } from '../../src/journal/writer.js';

interface Line {
  level: number;
  msg: string;
  failures?: number;
  total?: number;
  error?: string;
}

/** A pino logger whose lines land in `lines`, parsed. */
function capture(): { log: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Line);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

const resume = { type: 'resume', session: 's', reset: false, by: 'op' } as const;

/** Lets pino's stream write what was logged (a turn of the event loop, not a clock). */
const flushed = () => new Promise<void>((r) => setImmediate(r));

describe('journal outages are loud, not a flood', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a writer on /dev/full: every failure counted, one log line a second with the count', async () => {
    const { log, lines } = capture();
    let counted = 0;
    const health = new JournalHealth('/dev/full', log, () => counted++);
    // /dev/full answers every write with ENOSPC: a disk that is full.
    const w = new JournalWriter('/dev/full', { lastSeq: 0, fsyncMs: 100, health });
    for (let i = 0; i < 50; i++) expect(() => w.append(resume)).toThrow(/journal write failed/);
    await flushed();
    expect(counted).toBe(50);
    // The first failure is logged at once; the 49 after it wait for the next second.
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, failures: 1, total: 1 });
    expect(lines[0]?.error).toMatch(/ENOSPC/);
    expect(lines[0]?.msg).toMatch(/every request is refused with 503/);

    vi.advanceTimersByTime(999);
    await flushed();
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(1);
    await flushed();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 50, failures: 49, total: 50 });

    // A quiet second logs nothing; the next failure after it is logged at once again.
    vi.advanceTimersByTime(5_000);
    await flushed();
    expect(lines).toHaveLength(2);
    expect(() => w.append(resume)).toThrow();
    await flushed();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ failures: 1, total: 51 });

    const view = health.view();
    expect(view).toMatchObject({
      status: 'degraded',
      journal: { path: '/dev/full', writable: false, failures: 51 },
    });
    expect(view.journal.lastFailure?.error).toMatch(/ENOSPC/);
    expect(view.journal.failingSince).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('recovery is logged once, with the outage’s count and length; then ok', async () => {
    const { log, lines } = capture();
    const health = new JournalHealth('/j', log);
    health.recovered(); // nothing failed: nothing to say
    for (let i = 0; i < 3; i++) health.failed('ENOSPC: no space left on device, write');
    vi.advanceTimersByTime(400);
    health.recovered();
    health.recovered();
    // The timer of the outage's next line is gone with it.
    vi.advanceTimersByTime(2_000);
    await flushed();
    expect(lines.map((l) => [l.level, l.failures])).toEqual([
      [50, 1],
      [30, 3],
    ]);
    expect(lines[1]?.msg).toBe(
      'journal: writable again after 3 failed write(s) over 400 ms; requests are served',
    );
    expect(health.view()).toMatchObject({
      status: 'ok',
      journal: { writable: true, failingSince: null, failures: 3 },
    });
    expect(health.view().journal.lastFailure?.error).toMatch(/ENOSPC/);
  });

  it('close logs the failures not yet logged', async () => {
    const { log, lines } = capture();
    const health = new JournalHealth('/j', log);
    for (let i = 0; i < 4; i++) health.failed('EIO');
    health.close();
    await flushed();
    expect(lines.map((l) => l.failures)).toEqual([1, 3]);
  });
});
