import { TrajgateError } from '../errors.js';
import { segmentsOf } from './files.js';
import { currentNames } from './old-names.js';
import { SegmentReader } from './segment-reader.js';
import { isPart } from './snapshot-read.js';
import type { Located, SessionIndex } from './session-index.js';
import { listedWithEvents } from './session-index.js';

/** What pages read through: the journal's files as one stream (see SegmentReader). */
type FileHandle = Pick<SegmentReader, 'read' | 'start'>;

/** Bytes of journal one page read from the file itself may cover (older than the index). */
export const SCAN_BUDGET = 4 << 20;
/** Read backwards in chunks this size: each chunk's lines of the session are parsed at once. */
const CHUNK = 64 << 10;
/**
 * Lines closer than GAP are read in one go, up to SPAN bytes a read: copying a gap from the
 * page cache on the thread pool costs less than another read's turn on the event loop.
 */
const GAP = 256 << 10;
const SPAN = 1 << 20;
const SEQ = Buffer.from('{"seq":');
const SNAPSHOT = Buffer.from('"type":"snapshot"');

/**
 * One read buffer kept from call to call: a megabyte allocated per call is memory outside the
 * heap that V8 counts, and enough of it makes the GC run full collections on the agents' time.
 */
let spare: Buffer = Buffer.alloc(0);
const take = (bytes: number): Buffer => {
  const buf = spare.length >= bytes ? spare : Buffer.allocUnsafe(Math.max(bytes, SPAN));
  spare = Buffer.alloc(0);
  return buf;
};
const give = (buf: Buffer): void => {
  if (buf.length > spare.length) spare = buf;
};

/**
 * A page of a session's events (and the TLS handshakes its agent refused: listedWithEvents) as
 * the admin API's JSON body, `{"events":[…],"next":N|null}`:
 * the journal lines themselves (each with the `status` its request ended with, when known),
 * newest first, copied into the body as written: no parse, no stringify. Every read is
 * asynchronous and bounded: lines the index locates are read by span, older ones by reading
 * backwards at most SCAN_BUDGET bytes (such a page may hold fewer than `limit` events; only
 * `next: null` says there are no more).
 */
export async function eventsPage(
  path: string,
  index: SessionIndex,
  session: string,
  before: number,
  limit: number,
): Promise<Buffer> {
  const page = index.page(session, before, limit);
  if (page.events.length === 0 && page.scanFrom === null) return new Body(0).end(null);
  // Across rotated files: the index's offsets run on from one file into the next.
  const fh = new SegmentReader(segmentsOf(path));
  let buf = take(SPAN);
  try {
    if (page.scanFrom === null) return (await readLocated(fh, buf, page.events)).end(page.next);
    const scanned = await scanBack(fh, buf, page.scanFrom, session, before, limit);
    buf = scanned.buf;
    return scanned.body.end(scanned.next);
  } finally {
    give(buf);
    await fh.close();
  }
}

/**
 * The located lines, in the order given (newest first, so descending offsets), read span by
 * span into `buf` (at least SPAN bytes), each checked to be the line the index says.
 */
async function readLocated(fh: FileHandle, buf: Buffer, events: readonly Located[]): Promise<Body> {
  const body = new Body(events.reduce((n, e) => n + e.bytes + 16, 0));
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
    // A single line longer than SPAN is read on its own.
    const span = end - start <= buf.length ? buf : Buffer.allocUnsafe(end - start);
    await readFully(fh, span.subarray(0, end - start), start);
    for (const e of events.slice(i, j)) {
      const line = span.subarray(e.offset - start, e.offset - start + e.bytes);
      if (seqOf(line) !== e.seq || line[line.length - 1] !== 0x7d) {
        throw new TrajgateError(
          'E_JOURNAL_CORRUPT',
          `${e.offset}: the journal line of seq ${e.seq} is not where it was written`,
        );
      }
      body.add(line, e.status);
    }
    i = j;
  }
  return body;
}

/**
 * Reads backwards from `from` (a line start) into `buf` (grown past CHUNK for a longer line:
 * returned), keeping the session's events below `before` and the statuses of outcomes met on
 * the way, until `limit` events, the file's start, or SCAN_BUDGET bytes (then `next` is the
 * earliest seq read, so paging goes on from there).
 */
async function scanBack(
  fh: FileHandle,
  buf: Buffer,
  from: number,
  session: string,
  before: number,
  limit: number,
): Promise<{ body: Body; next: number | null; buf: Buffer }> {
  const marker = Buffer.from(`"session":${JSON.stringify(session)}`);
  const low = fh.start;
  const statuses = new Map<number, number | null>();
  const body = new Body(64 << 10);
  let earliest = Infinity;
  /** The whole lines in buf[start, …]: only those naming the session are parsed. */
  const visit = (buf: Buffer, start: number): void => {
    if (start === buf.length) return;
    const first = buf.subarray(start, buf.indexOf(10, start));
    // Part lines (a snapshot's, at a file's start) carry no seq.
    if (!isPart(first)) earliest = seqOf(first);
    // A quote inside a JSON string is escaped: the marker is only ever a "session" field.
    const lines: number[] = [];
    for (let at = buf.indexOf(marker, start); at >= 0; at = buf.indexOf(marker, at + 1)) {
      const line = buf.lastIndexOf(10, at) + 1;
      if (lines.at(-1) !== line) lines.push(line);
    }
    for (let i = lines.length - 1; i >= 0 && body.count < limit; i--) {
      const line = buf.subarray(lines[i], buf.indexOf(10, lines[i]));
      // A snapshot names every session: none of its events are lines of their own.
      if (isPart(line) || line.subarray(0, 160).includes(SNAPSHOT)) continue;
      const r = currentNames(JSON.parse(line.toString('utf8')) as Record<string, unknown>);
      if (r.session !== session || typeof r.seq !== 'number') continue;
      if (r.type === 'outcome' && typeof r.rid === 'number') {
        statuses.set(r.rid, typeof r.status === 'number' ? r.status : null);
      } else if (
        listedWithEvents({ type: String(r.type), handshake: r.handshake }) &&
        r.seq < before
      ) {
        body.add(
          line,
          r.type === 'event' ? statuses.get(typeof r.rid === 'number' ? r.rid : r.seq) : undefined,
        );
        if (body.count === limit) earliest = r.seq;
      }
    }
  };
  let pos = from;
  let carry = 0; // bytes at buf's start: the part of a line the previous chunk began with
  let read = 0;
  // Past the budget only to reach one line below `before`, so the next page starts lower.
  while (pos > low && body.count < limit && (read < SCAN_BUDGET || earliest >= before)) {
    const len = Math.min(CHUNK, pos - low);
    pos -= len;
    if (buf.length < len + carry) {
      const grown = Buffer.allocUnsafe(2 * (len + carry));
      buf.copy(grown, 0, 0, carry);
      buf = grown;
    }
    buf.copyWithin(len, 0, carry);
    await readFully(fh, buf.subarray(0, len), pos);
    read += len;
    const lines = buf.subarray(0, len + carry);
    // Whole lines begin after the chunk's first newline, or at the file's start.
    const nl = lines.indexOf(10);
    const start = pos === low ? 0 : nl < 0 ? lines.length : nl + 1;
    visit(lines, start);
    carry = start;
  }
  return { body, next: pos === low && body.count < limit ? null : earliest, buf };
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

/**
 * `{"events":[…],"next":…}` copied together line by line into one growing buffer (no object
 * per line for the collector), each line as written with `"status"` spliced in where known.
 */
class Body {
  #buf: Buffer;
  #at: number;
  count = 0;

  constructor(size: number) {
    this.#buf = Buffer.allocUnsafe(size + 64);
    this.#at = this.#buf.write('{"events":[');
  }

  add(line: Buffer, status: number | null | undefined): void {
    const tail = status === undefined ? '}' : `,"status":${status}}`;
    this.#reserve(line.length + tail.length + 1);
    if (this.count++ > 0) this.#buf[this.#at++] = 0x2c;
    this.#at += line.copy(this.#buf, this.#at, 0, line.length - 1);
    this.#at += this.#buf.write(tail, this.#at, 'latin1');
  }

  end(next: number | null): Buffer {
    const tail = `],"next":${next}}`;
    this.#reserve(tail.length);
    this.#at += this.#buf.write(tail, this.#at, 'latin1');
    return this.#buf.subarray(0, this.#at);
  }

  #reserve(bytes: number): void {
    if (this.#at + bytes <= this.#buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + bytes));
    this.#buf.copy(grown, 0, 0, this.#at);
    this.#buf = grown;
  }
}
