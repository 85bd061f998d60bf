import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { errnoCode, TrajgateError } from '../errors.js';
import type { Located, SessionIndex } from './session-index.js';

/** Bytes of journal one page read from the file itself may cover (older than the index). */
export const SCAN_BUDGET = 4 << 20;
const CHUNK = 256 << 10;
/**
 * Lines closer than GAP are read in one go, up to SPAN bytes a read: copying a gap from the
 * page cache on the thread pool costs less than another read's turn on the event loop.
 */
const GAP = 256 << 10;
const SPAN = 1 << 20;
const SEQ = Buffer.from('{"seq":');
const COMMA = Buffer.from(',');

interface Found {
  readonly line: Buffer;
  readonly status: number | null | undefined;
}

/**
 * A page of a session's events as the admin API's JSON body, `{"events":[…],"next":N|null}`:
 * the journal lines themselves (each with the `status` its request ended with, when known),
 * newest first: no parse, no stringify. Every read is asynchronous and bounded: lines the
 * index locates are read by span, older ones by reading backwards at most SCAN_BUDGET bytes (a page may then hold
 * fewer than `limit` events; only `next: null` says there are no more).
 */
export async function eventsPage(
  path: string,
  index: SessionIndex,
  session: string,
  before: number,
  limit: number,
): Promise<Buffer> {
  const page = index.page(session, before, limit);
  if (page.events.length === 0 && page.scanFrom === null) return body([], null);
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return body([], null);
    throw err;
  }
  try {
    if (page.scanFrom === null) return body(await readLocated(fh, page.events), page.next);
    const scanned = await scanBack(fh, page.scanFrom, session, before, limit);
    return body(scanned.found, scanned.next);
  } finally {
    await fh.close();
  }
}

/**
 * The located lines, in the order given (newest first, so descending offsets), read span by
 * span into one reused buffer; each line is copied out (small copies come from Node's pool).
 */
async function readLocated(fh: FileHandle, events: readonly Located[]): Promise<Found[]> {
  const found: Found[] = [];
  let buf = Buffer.alloc(0);
  for (let i = 0; i < events.length;) {
    const last = events[i] as Located;
    const end = last.offset + last.bytes;
    let start = last.offset;
    let j = i + 1;
    for (let n = events[j]; n && start - (n.offset + n.bytes) <= GAP; n = events[j]) {
      if (end - n.offset > SPAN) break;
      start = n.offset;
      j++;
    }
    if (buf.length < end - start) buf = Buffer.allocUnsafe(Math.max(end - start, 64 << 10));
    await readFully(fh, buf.subarray(0, end - start), start);
    for (const e of events.slice(i, j)) {
      const line = buf.subarray(e.offset - start, e.offset - start + e.bytes);
      if (seqOf(line) !== e.seq || line[line.length - 1] !== 0x7d) {
        throw new TrajgateError(
          'E_JOURNAL_CORRUPT',
          `${e.offset}: the journal line of seq ${e.seq} is not where it was written`,
        );
      }
      found.push({ line: Buffer.from(line), status: e.status });
    }
    i = j;
  }
  return found;
}

/**
 * Reads backwards from `from` (a line start), keeping the session's events below `before`
 * and the statuses of outcomes met on the way, until `limit` events, the file's start, or
 * SCAN_BUDGET bytes (then `next` is the earliest seq read, so paging goes on from there).
 */
async function scanBack(
  fh: FileHandle,
  from: number,
  session: string,
  before: number,
  limit: number,
): Promise<{ found: Found[]; next: number | null }> {
  const marker = Buffer.from(`"session":${JSON.stringify(session)}`);
  const statuses = new Map<number, number | null>();
  const found: Found[] = [];
  let earliest = Infinity;
  /** The whole lines in buf[start, end): only those naming the session are parsed. */
  const visit = (buf: Buffer, start: number, end: number): void => {
    if (start === end) return;
    earliest = seqOf(buf.subarray(start, buf.indexOf(10, start)));
    // A quote inside a JSON string is escaped: the marker is only ever a "session" field.
    const lines: number[] = [];
    for (let at = buf.indexOf(marker, start); at >= 0; at = buf.indexOf(marker, at + 1)) {
      const line = buf.lastIndexOf(10, at) + 1;
      if (lines.at(-1) !== line) lines.push(line);
    }
    for (let i = lines.length - 1; i >= 0 && found.length < limit; i--) {
      const line = buf.subarray(lines[i], buf.indexOf(10, lines[i]));
      const r = JSON.parse(line.toString('utf8')) as Record<string, unknown>;
      if (r.session !== session || typeof r.seq !== 'number') continue;
      if (r.type === 'outcome' && typeof r.ref === 'number') {
        statuses.set(r.ref, typeof r.status === 'number' ? r.status : null);
      } else if (r.type === 'event' && r.seq < before) {
        found.push({ line, status: statuses.get(typeof r.rid === 'number' ? r.rid : r.seq) });
        if (found.length === limit) earliest = r.seq;
      }
    }
  };
  let pos = from;
  let carry = Buffer.alloc(0);
  let read = 0;
  // Past the budget only to reach one line below `before`, so the next page starts lower.
  while (pos > 0 && found.length < limit && (read < SCAN_BUDGET || earliest >= before)) {
    const len = Math.min(CHUNK, pos);
    pos -= len;
    const buf = Buffer.allocUnsafe(len + carry.length);
    await readFully(fh, buf.subarray(0, len), pos);
    carry.copy(buf, len);
    read += len;
    // Whole lines begin after the chunk's first newline, or at the file's start.
    const nl = buf.indexOf(10);
    const start = pos === 0 ? 0 : nl < 0 ? buf.length : nl + 1;
    visit(buf, start, buf.length);
    carry = buf.subarray(0, start);
  }
  return { found, next: pos === 0 && found.length < limit ? null : earliest };
}

/** The seq a line starts with (`{"seq":N,`), else as JSON says. */
function seqOf(line: Buffer): number {
  if (line.compare(SEQ, 0, SEQ.length, 0, SEQ.length) === 0) {
    let n = 0;
    for (let i = SEQ.length; i < line.length; i++) {
      const d = (line[i] as number) - 48;
      if (d < 0 || d > 9) return i > SEQ.length && line[i] === 0x2c ? n : NaN;
      n = n * 10 + d;
    }
  }
  const seq = (JSON.parse(line.toString('utf8')) as { seq?: unknown }).seq;
  return typeof seq === 'number' ? seq : NaN;
}

async function readFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  for (let done = 0; done < buf.length;) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done);
    if (bytesRead === 0) throw new TrajgateError('E_JOURNAL_CORRUPT', 'the journal is shorter');
    done += bytesRead;
  }
}

const suffixes = new Map<number | null, Buffer>();
const suffix = (status: number | null): Buffer => {
  let b = suffixes.get(status);
  if (!b) suffixes.set(status, (b = Buffer.from(`,"status":${status}}`)));
  return b;
};

/** `{"events":[…],"next":…}` from the lines as written, a status spliced in where known. */
function body(found: readonly Found[], next: number | null): Buffer {
  const parts: Buffer[] = [Buffer.from('{"events":[')];
  for (const [i, { line, status }] of found.entries()) {
    if (i > 0) parts.push(COMMA);
    if (status === undefined) parts.push(line);
    else parts.push(line.subarray(0, line.length - 1), suffix(status));
  }
  parts.push(Buffer.from(`],"next":${next}}`));
  return Buffer.concat(parts);
}
