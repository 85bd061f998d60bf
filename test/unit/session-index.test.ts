import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventsPage, SCAN_BUDGET } from '../../src/journal/event-pages.js';
import { openJournal } from '../../src/journal/open.js';
import type { EventRecord, JournalRecord, Unstamped } from '../../src/journal/records.js';
import type { IndexPage } from '../../src/journal/session-index.js';
import { SessionIndex } from '../../src/journal/session-index.js';
import type { JournalWriter } from '../../src/journal/writer.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * The session index kept as records are written equals the one rebuilt from the file at start,
 * and pages of events read through it (and, past a session's ring, backwards from the file
 * within SCAN_BUDGET) are the session's events as the journal has them, newest first.
 */
const tmp = tempDir();
let n = 0;

/** A journal written through the writer, its index kept live (`ring` events per session). */
function written(ring: number, write: (w: JournalWriter) => void): [string, SessionIndex] {
  const path = join(tmp, `journal-${++n}.jsonl`);
  const live = new SessionIndex(ring);
  const { writer } = openJournal(path, () => undefined, {
    fsyncMs: 100,
    warn: () => undefined,
    onAppend: (r, seq, offset, bytes) => live.add(r, seq, offset, bytes),
  });
  write(writer);
  writer.close();
  return [path, live];
}

function rebuilt(path: string, ring: number): SessionIndex {
  const index = new SessionIndex(ring);
  const { writer } = openJournal(path, () => undefined, {
    fsyncMs: 100,
    warn: () => undefined,
    onAppend: (r, seq, offset, bytes) => index.add(r, seq, offset, bytes),
  });
  writer.close();
  return index;
}

/** `method` pads a line: targets past 512 bytes are journaled as a prefix, methods are not. */
const event = (
  session: string,
  target: string,
  rid?: number,
  method?: string,
): Unstamped<EventRecord> => ({
  type: 'event',
  session,
  source: 'proxy',
  kind: 'network',
  target,
  ...(method === undefined ? {} : { method }),
  approved: false,
  verdict: 'ALLOW',
  boundary: null,
  count: 0,
  reason: 'ok',
  ...(rid === undefined ? {} : { rid, held: true }),
});

/** One request as the pipeline writes it: its event, then its outcome with the next record. */
function request(
  w: JournalWriter,
  session: string,
  target: string,
  status: number | null,
  method?: string,
) {
  const seq = w.append(event(session, target, undefined, method));
  w.appendLater({
    type: 'outcome',
    rid: seq,
    session,
    status,
    bytesUp: 1,
    bytesDown: 2,
    durationMs: 3,
  });
  return seq;
}

/** Every page from the newest on, following `next` (bounded). */
function indexPages(index: SessionIndex, session: string, limit: number): IndexPage[] {
  const pages: IndexPage[] = [];
  let before = Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < 100; i++) {
    const page = index.page(session, before, limit);
    pages.push(page);
    if (page.next === null) break;
    before = page.next;
  }
  return pages;
}

type Listed = EventRecord & { status?: number | null };

/** The session's events newest first, each with its request's status: a plain read of it all. */
function expected(path: string, session: string): Listed[] {
  const records = readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JournalRecord);
  const status = new Map<number, number | null>();
  for (const r of records)
    if (r.type === 'outcome' && r.session === session) status.set(r.rid, r.status);
  return records
    .filter((r): r is EventRecord => r.type === 'event' && r.session === session)
    .map((r) => (status.has(r.rid ?? r.seq) ? { ...r, status: status.get(r.rid ?? r.seq) } : r))
    .reverse();
}

/** Pages of the events route's body from the newest on; their sizes and the events. */
async function apiPages(path: string, index: SessionIndex, session: string, limit: number) {
  const sizes: number[] = [];
  const events: Listed[] = [];
  let before = Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < 1000; i++) {
    const page = JSON.parse(
      (await eventsPage(path, index, session, before, limit)).toString('utf8'),
    ) as { events: Listed[]; next: number | null };
    sizes.push(page.events.length);
    events.push(...page.events);
    if (page.next === null) return { sizes, events };
    expect(page.next).toBeLessThan(before);
    before = page.next;
  }
  throw new Error('paging did not end');
}

describe('session index', () => {
  it('built as records are written equals the one rebuilt from the file at start', () => {
    const [path, live] = written(8, (w) => {
      for (let i = 0; i < 30; i++) {
        request(w, 'a', `https://a.example/${i}`, 200);
        if (i % 3 === 0)
          request(w, 'ünï-cödé', `https://ü.example/ファイル/${i}`, i % 2 ? null : 502);
        if (i % 7 === 0) w.append({ type: 'resume', session: 'a', reset: false, by: 'op' });
      }
      const held = w.append(event('b', 'https://b.example/held'));
      w.append(event('b', 'https://b.example/held', held));
      w.appendLater({
        type: 'outcome',
        rid: held,
        session: 'b',
        status: 403,
        bytesUp: 0,
        bytesDown: 0,
        durationMs: 9,
      });
      w.appendAll([
        event('b', 'https://b.example/paused'),
        { type: 'resume', session: 'b', reset: true, by: 'op' },
      ]);
    });
    const again = rebuilt(path, 8);
    expect(again.records).toBe(live.records);
    expect(again.end).toBe(live.end);
    for (const session of ['a', 'ünï-cödé', 'b', 'nobody']) {
      for (const limit of [1, 3, 1000]) {
        expect(indexPages(again, session, limit)).toEqual(indexPages(live, session, limit));
      }
    }
    // a's 30 events: the ring holds the newest 8, then the file is read from past the oldest
    const pages = indexPages(live, 'a', 5);
    expect(pages.map((p) => p.events.length)).toEqual([5, 3, 0]);
    expect(pages[2]?.scanFrom).toBeGreaterThan(pages[1]?.events.at(-1)?.offset ?? Infinity);
    // a re-judged event shares its request's outcome
    expect(live.page('b', Number.MAX_SAFE_INTEGER, 3).events.map((e) => e.status)).toEqual([
      undefined,
      403,
      403,
    ]);
  });

  it('pages by cursor: the newest from the index, older ones from the file, all of them', async () => {
    const [path, index] = written(50, (w) => {
      for (let i = 0; i < 400; i++) {
        request(w, 'busy', `https://busy.example/${i}`, i % 5 ? 200 : null);
        if (i % 4 === 0) request(w, 'other', `https://other.example/ü/${i}`, 204);
      }
    });
    for (const limit of [3, 50, 1000]) {
      const { sizes, events } = await apiPages(path, index, 'busy', limit);
      expect(events).toEqual(expected(path, 'busy'));
      expect(Math.max(...sizes)).toBeLessThanOrEqual(limit);
    }
    expect((await apiPages(path, index, 'other', 10)).events).toEqual(expected(path, 'other'));
    expect((await apiPages(path, index, 'nobody', 10)).events).toEqual([]);
  });

  it('a page read from the file covers at most SCAN_BUDGET bytes and paging goes on from it', async () => {
    const padding = 'x'.repeat(8 * 1024);
    // lines longer than a read: one of 200 KiB among the older ones, one of 1.5 MiB in the ring
    const long = (i: number) =>
      i === 3 ? 'y'.repeat(200 << 10) : i === 10 ? 'z'.repeat(3 << 19) : '';
    const [path, index] = written(4, (w) => {
      for (let i = 0; i < 12; i++) {
        request(w, 'rare', `https://rare.example/${i}`, 200, `GET${long(i)}`);
        // ~1.5 MiB of another session between two of rare's events
        for (let k = 0; k < 192; k++)
          w.append(event('noisy', 'https://noisy.example/', undefined, `GET${padding}`));
      }
    });
    const { sizes, events } = await apiPages(path, index, 'rare', 100);
    expect(events).toEqual(expected(path, 'rare'));
    expect(sizes[0]).toBe(4); // the ring
    // past it each page holds what ~4 MiB of journal held: a few events, then the next page
    expect(
      sizes.slice(1, -1).every((s) => s >= 1 && s <= Math.ceil(SCAN_BUDGET / (1.5 * 2 ** 20)) + 1),
    ).toBe(true);
    expect(sizes.length).toBeGreaterThan(3);
  });
});
