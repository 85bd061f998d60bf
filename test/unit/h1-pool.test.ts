import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { H1Handler, H1Request } from '../../src/action/h1-exchange.js';
import { H1Pool } from '../../src/action/h1-pool.js';
import { errors } from '../../src/undici.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * H1Pool (engine: lean) against a raw loopback upstream: backpressure (nothing more is told,
 * nor read, while the handler holds; all of it once resumed), abort (its connection closed,
 * never reused), keep-alive (one connection for requests one after another; a hint's idle
 * time), the retry (only a bodiless idempotent request), and close (idle connections at once,
 * requests under way first). engine-upstream.test.ts holds its bytes and answers to undici's.
 */
const BIG = Buffer.alloc(16 << 20);
for (let i = 0; i < BIG.length; i += 4) BIG.writeUInt32BE(i, i);

/** The upstream's sockets answering /big and /hang, for the tests to look at and end. */
const sockets: Record<string, Socket> = {};
let answerHang: (() => void) | null = null;
const ok = (body: string, fields = '') =>
  `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n${fields}\r\n${body}`;

const upstream = await startRecordingUpstream({
  '/plain': { answer: ({ socket }) => socket.write(ok('plain')) },
  '/hint': {
    answer: ({ socket }) => {
      sockets.hint = socket;
      socket.write(ok('hint', 'Keep-Alive: timeout=3\r\n'));
    },
  },
  '/small': { answer: ({ socket }) => socket.write(ok('held back')) },
  '/big': {
    answer: ({ socket }) => {
      sockets.big = socket;
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\n\r\n`);
      let at = 0;
      const more = () => {
        while (at < BIG.length) {
          const chunk = BIG.subarray(at, at + 65_536);
          at += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', more);
        }
      };
      more();
    },
  },
  '/hang': {
    answer: ({ socket }) => {
      sockets.hang = socket;
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf ');
      answerHang = () => socket.write('done!');
    },
  },
  '/silent': { answer: () => {} },
  '/stale': {
    answer: ({ socket, reused }) => (reused ? socket.resetAndDestroy() : socket.write(ok('new'))),
  },
});

const pool = new H1Pool({ connectTimeout: 5_000, upstreamTimeout: 10_000 });
afterAll(() => pool.close());

const request = (path: string, method = 'GET', into = pool): Promise<Seen> => {
  const { seen, handler } = recorder();
  into.dispatch(target(path, method), handler);
  return seen.finished;
};
const target = (path: string, method = 'GET'): H1Request => ({
  authority: `127.0.0.1:${upstream.port}`,
  address: '127.0.0.1',
  port: upstream.port,
  method,
  path,
  headers: ['host', `127.0.0.1:${upstream.port}`],
  body: null,
});

interface Seen {
  status: number;
  body: Buffer[];
  /** onData calls made while the handler held (answered false and was not resumed). */
  whileHeld: number;
  errors: Error[];
  completed: number;
  readonly finished: Promise<Seen>;
}

/** A handler that records what it is told; `hold` makes it answer false (until resumed). */
function recorder(options: { holdHead?: boolean; holdBody?: boolean } = {}) {
  let finish: (s: Seen) => void = () => {};
  const seen: Seen = {
    status: 0,
    body: [],
    whileHeld: 0,
    errors: [],
    completed: 0,
    finished: new Promise((r) => (finish = r)),
  };
  const control = {
    held: false,
    abort: null as ((err: Error) => void) | null,
    resume: null as (() => void) | null,
    /** Stops holding, and resumes. */
    release() {
      options = {};
      control.held = false;
      control.resume?.();
    },
  };
  const handler: H1Handler = {
    onConnect: (abort) => void (control.abort = abort),
    onHeaders(status, _fields, resume) {
      if (status < 200) return true;
      seen.status = status;
      control.resume = resume;
      control.held = options.holdHead === true;
      return !control.held;
    },
    onData(chunk) {
      if (control.held) seen.whileHeld++;
      seen.body.push(chunk);
      control.held = options.holdBody === true;
      return !control.held;
    },
    onComplete() {
      seen.completed++;
      finish(seen);
    },
    onError(err) {
      seen.errors.push(err);
      finish(seen);
    },
  };
  return { seen, handler, control };
}

/** A connection is offered again a turn of the event loop after its answer (as undici's). */
const turn = () => new Promise((r) => setImmediate(r));

const bytesOf = (seen: Seen) => seen.body.reduce((n, c) => n + c.length, 0);

describe('H1Pool', () => {
  it('reuses one connection for requests one after another', async () => {
    const before = upstream.connections;
    for (let i = 0; i < 3; i++) {
      const seen = await request('/plain');
      expect(Buffer.concat(seen.body).toString()).toBe('plain');
      await turn();
    }
    expect(upstream.connections - before).toBe(1);
  });

  it('holds the answer while the handler does: no more data told or read until resumed', async () => {
    const { seen, handler, control } = recorder({ holdBody: true });
    pool.dispatch(target('/big'), handler);
    // The upstream cannot write more: its socket's buffer is full because nothing reads.
    await waitFor(() => sockets.big?.writableNeedDrain === true && seen.body.length > 0);
    const told = bytesOf(seen);
    expect(told).toBeLessThan(BIG.length);
    expect(seen.body).toHaveLength(1);
    control.release();
    await seen.finished;
    expect(seen.whileHeld).toBe(0);
    expect(seen.completed).toBe(1);
    expect(Buffer.concat(seen.body).equals(BIG)).toBe(true);
  });

  it('counts the upstream silence, not a hold: a held answer outlives the upstream timeout', async () => {
    const short = new H1Pool({ connectTimeout: 5_000, upstreamTimeout: 200 });
    const held = recorder({ holdBody: true });
    short.dispatch(target('/big'), held.handler);
    await waitFor(() => held.seen.body.length > 0);
    // A request the upstream never answers times out: the held one has waited longer than that.
    const silent = await request('/silent', 'GET', short);
    expect(silent.errors[0]).toBeInstanceOf(errors.HeadersTimeoutError);
    expect(held.seen.errors).toEqual([]);
    held.control.release();
    await held.seen.finished;
    expect(held.seen.errors).toEqual([]);
    expect(bytesOf(held.seen)).toBe(BIG.length);
    await short.close();
  });

  it('holds a held head: its body and end come after the resume, in order', async () => {
    const { seen, handler, control } = recorder({ holdHead: true });
    pool.dispatch(target('/small'), handler);
    await waitFor(() => seen.status === 200);
    const from = upstream.requests.length;
    // Another request meanwhile gets a connection of its own: the held one is busy.
    expect(Buffer.concat((await request('/plain')).body).toString()).toBe('plain');
    expect(upstream.requests.slice(from).map((r) => r.path)).toEqual(['/plain']);
    expect(seen.body).toHaveLength(0);
    expect(seen.completed).toBe(0);
    control.release();
    await seen.finished;
    expect(Buffer.concat(seen.body).toString()).toBe('held back');
    expect(seen.whileHeld).toBe(0);
  });

  it('abort: one error, the connection closed and never reused', async () => {
    const { seen, handler, control } = recorder();
    pool.dispatch(target('/hang'), handler);
    await waitFor(() => seen.body.length > 0);
    const socket = sockets.hang as Socket;
    const closed = new Promise((r) => socket.once('close', r));
    const stop = new Error('client closed');
    control.abort?.(stop);
    control.abort?.(new Error('again'));
    await closed;
    expect(seen.errors).toEqual([stop]);
    expect(seen.completed).toBe(0);
    const before = upstream.connections;
    await request('/plain');
    await request('/plain');
    expect(upstream.connections - before).toBeLessThanOrEqual(1);
  });

  it('closes a connection idle for a Keep-Alive hint less 2 s, sooner than the 4 s default', async () => {
    const fresh = new H1Pool({ connectTimeout: 5_000, upstreamTimeout: 10_000 });
    await request('/hint', 'GET', fresh);
    const done = Date.now();
    const socket = sockets.hint as Socket;
    if (!socket.closed) await new Promise((r) => socket.once('close', r));
    const idle = Date.now() - done;
    expect(idle).toBeGreaterThanOrEqual(900);
    expect(idle).toBeLessThan(3_500);
    await fresh.close();
  });

  it('sends a bodiless GET again on a new connection when a reused one was closed; never a POST', async () => {
    await request('/plain');
    await turn();
    const from = upstream.requests.length;
    const get = await request('/stale');
    expect(Buffer.concat(get.body).toString()).toBe('new');
    expect(upstream.requests.slice(from).map((r) => r.reused)).toEqual([true, false]);
    await turn();
    const post = await request('/stale', 'POST');
    expect(post.errors.map((e) => (e as { code?: string }).code)).toEqual(['ECONNRESET']);
    expect(upstream.requests.filter((r) => r.path === '/stale')).toHaveLength(3);
  });

  it('close: idle connections go at once, a request under way ends first, later ones fail', async () => {
    const closing = new H1Pool({ connectTimeout: 5_000, upstreamTimeout: 10_000 });
    await request('/plain', 'GET', closing);
    const { seen, handler } = recorder();
    closing.dispatch(target('/hang'), handler);
    await waitFor(() => seen.body.length > 0);
    const open = upstream.open;
    let closed = false;
    const done = closing.close().then(() => (closed = true));
    // The idle connection is closed; the one under way stays open.
    await waitFor(() => upstream.open === open - 1);
    expect(closed).toBe(false);
    answerHang?.();
    await done;
    expect(Buffer.concat(seen.body).toString()).toBe('half done!');
    const after = recorder();
    closing.dispatch(target('/plain'), after.handler);
    const late = await after.seen.finished;
    expect(late.errors[0]).toBeInstanceOf(errors.ClientClosedError);
  });
});
