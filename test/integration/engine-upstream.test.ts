import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { fileGateway } from '../helpers/file-gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange, refusingPort } from '../helpers/raw.js';
import type { RecordedRequest, Script } from '../helpers/recording-upstream.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';
import { waitFor } from '../helpers/wait.js';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';

/**
 * The lean engine's upstream client (src/action/h1-pool.ts) against undici's Agent, the
 * reference: every request below goes through a gateway on each engine to one raw upstream
 * that records the exact bytes it receives and answers scripted bytes. Both must send the same
 * bytes up (on a fresh or a reused connection alike), give the agent the same answer (status
 * line, fields but Date, body) and journal the same outcome. Where the lean engine differs on
 * purpose (the last rows, so that no other row follows a connection one engine closed and the
 * other kept), the row says how and why.
 */
const BIG = Buffer.alloc(1 << 20, 'abcdefghijklmnopqrstuvwxyz').toString('latin1');
const ok = (body: string, fields = '') =>
  `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n${fields}\r\n${body}`;

const scripts: Record<string, Script> = {
  '/get': { answer: ({ socket }) => socket.write(ok('hello', 'X-Thing: a\r\nX-Thing: b\r\n')) },
  '/head': { answer: ({ socket }) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n') },
  '/post': { answer: ({ socket }) => socket.write(ok('posted')) },
  '/streamed': { answer: ({ socket }) => socket.write(ok('streamed')) },
  '/big-down': { answer: ({ socket }) => socket.write(ok(BIG)) },
  '/big-up': { answer: ({ socket }) => socket.write(ok('thanks')) },
  '/slow': {
    answer: ({ socket }) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc');
      setTimeout(() => socket.write('def'), 150);
      setTimeout(() => socket.write('ghi'), 300);
    },
  },
  '/early-hints': {
    answer: ({ socket }) =>
      socket.write(`HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n${ok('hinted')}`),
  },
  '/continue': {
    answer: ({ socket }) => socket.write(`HTTP/1.1 100 Continue\r\n\r\n${ok('continued')}`),
  },
  '/no-content': { answer: ({ socket }) => socket.write('HTTP/1.1 204 No Content\r\n\r\n') },
  '/not-modified': {
    answer: ({ socket }) => socket.write('HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n'),
  },
  '/not-modified-length': {
    answer: ({ socket }) =>
      socket.write('HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 5\r\n\r\n'),
  },
  '/trailers': {
    answer: ({ socket }) =>
      socket.write(
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n' +
          '5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n',
      ),
  },
  '/close-delimited': {
    answer: ({ socket }) => socket.end('HTTP/1.1 200 OK\r\n\r\nuntil the close'),
  },
  '/connection-close': {
    answer: ({ socket }) => socket.end(ok('bye!', 'Connection: close\r\n')),
  },
  '/short-hint': { answer: ({ socket }) => socket.write(ok('hint', 'Keep-Alive: timeout=1\r\n')) },
  '/closes-after': { answer: ({ socket }) => socket.end(ok('then a FIN')) },
  '/stray': { answer: ({ socket }) => socket.write(`${ok('then more')}HTTP/1.1 200 OK\r\n`) },
  '/reset-mid-body': {
    answer: ({ socket }) =>
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly part', () =>
        setTimeout(() => socket.resetAndDestroy(), 50),
      ),
  },
  '/silent': { answer: () => {} },
  '/early-answer': {
    early: true,
    answer: ({ socket }) =>
      socket.write('HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo big!'),
  },
  '/bad-response': {
    answer: ({ socket }) => socket.write('HTTP/1.1 200 OK\r\nBad Field\r\n\r\n'),
  },
  '/stale': {
    answer: ({ socket, reused }) => (reused ? socket.resetAndDestroy() : socket.write(ok('fresh'))),
  },
};

const upstream = await startRecordingUpstream(scripts);
const refused = await refusingPort();
const at = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;

const config = (engine: 'node' | 'lean') => ({
  engine,
  network: {
    allow: [`127.0.0.1:${upstream.port}`, `127.0.0.1:${refused}`],
    allowPrivate: ['127.0.0.1/32'],
  },
  limits: { upstreamTimeout: '1s' },
});
const gateways = {
  node: await startTestGateway(config('node')),
  lean: await startTestGateway(config('lean')),
};
afterAll(() => Promise.all([gateways.node.stop(), gateways.lean.stop()]));

/** A request line and fields, absolute-form, `Connection: close` so the answer ends it. */
const head = (method: string, url: string, fields = '') =>
  `${method} ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n${fields}\r\n`;

/** How the agent sends its request: raw bytes to the proxy; resolves with what came back. */
type Send = (proxyPort: number) => Promise<string>;

const raw =
  (...chunks: string[]): Send =>
  async (port) =>
    (await exchange(port, chunks, { timeoutMs: 10_000 })).text;

/**
 * A chunked upload whose second chunk is written only once the upstream has the first: chunk
 * boundaries, which the engines re-frame, are the agent's, not the network's.
 */
const streamed =
  (path: string): Send =>
  (port) =>
    new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      let got = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (got += d));
      socket.on('close', () => resolve(got));
      const from = upstream.requests.length;
      socket.write(
        head('POST', at(upstream.port, path), 'Transfer-Encoding: chunked\r\n') + '4\r\nfirs\r\n',
      );
      void waitFor(() => upstream.requests[from]?.bytes.endsWith('firs') === true).then(() =>
        socket.write('6\r\nt, sec\r\n3\r\nond\r\n0\r\n\r\n'),
      );
    });

interface Seen {
  readonly answer: { readonly head: string; readonly body: string };
  readonly upstream: readonly RecordedRequest[];
  readonly outcome: Pick<OutcomeRecord, 'status' | 'bytesUp' | 'bytesDown' | 'error' | 'failed'>;
}

/** The answer's status line and fields (Date left out), and its body de-chunked. */
function answerOf(text: string): Seen['answer'] {
  const end = text.indexOf('\r\n\r\n');
  const headText = end < 0 ? text : text.slice(0, end);
  const lines = headText.split('\r\n').filter((l) => !/^date:/i.test(l));
  let body = end < 0 ? '' : text.slice(end + 4);
  if (/\r\ntransfer-encoding: chunked/i.test(headText)) body = dechunk(body);
  return { head: lines.join('\r\n'), body };
}

function dechunk(text: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    const size = eol < 0 ? 0 : parseInt(text.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

/** Sends through `g` and collects what the agent, the upstream and the journal saw. */
async function through(g: TestGateway, url: string, send: Send): Promise<Seen> {
  const from = upstream.requests.length;
  const text = await send(g.gw.proxy.port);
  let outcome: OutcomeRecord | undefined;
  await waitFor(() => {
    const records = g.records();
    const events = records.filter((r): r is EventRecord => r.type === 'event');
    const event = events.filter((e) => e.target === url).at(-1);
    outcome = records.find((r): r is OutcomeRecord => r.type === 'outcome' && r.rid === event?.seq);
    return outcome !== undefined;
  });
  const { status, bytesUp, bytesDown, error, failed } = outcome as OutcomeRecord;
  return {
    answer: answerOf(text),
    upstream: upstream.requests.slice(from).map((r) => ({ ...r })),
    outcome: { status, bytesUp, bytesDown, error, failed },
  };
}

interface Row {
  readonly name: string;
  readonly url: string;
  readonly send: Send;
  /** The status the agent gets (both engines, unless `lean` says otherwise). */
  readonly status: number;
  /** Where the lean engine differs on purpose: what it does instead, and why. */
  readonly lean?: { readonly status: number; readonly why: string };
}

const u = (path: string) => at(upstream.port, path);
/** A row whose agent sends `method path` with `fields` and `body` in one write. */
const one = (
  name: string,
  method: string,
  path: string,
  status: number,
  fields = '',
  body = '',
): Row => ({ name, url: u(path), send: raw(head(method, u(path), fields) + body), status });
/** A row where the lean engine answers `status` instead, on purpose (`why`). */
const differs = (row: Row, status: number, why: string): Row => ({ ...row, lean: { status, why } });

const rows: Row[] = [
  one('GET, repeated fields', 'GET', '/get', 200),
  one('HEAD (no body read)', 'HEAD', '/head', 200),
  one('GET after a HEAD (undici closes after a HEAD)', 'GET', '/get', 200),
  one('POST with Content-Length', 'POST', '/post', 200, 'Content-Length: 11\r\n', 'hello=world'),
  one('POST with an empty body', 'POST', '/post', 200, 'Content-Length: 0\r\n'),
  one(
    'GET with Content-Length: 0 (dropped, as undici does)',
    'GET',
    '/get',
    200,
    'Content-Length: 0\r\n',
  ),
  one(
    'GET with a body (the connection is not reused)',
    'GET',
    '/get',
    200,
    'Content-Length: 4\r\n',
    'body',
  ),
  one('GET after it (a new connection)', 'GET', '/get', 200),
  { name: 'POST streamed chunked', url: u('/streamed'), send: streamed('/streamed'), status: 200 },
  one('1 MiB answer', 'GET', '/big-down', 200),
  one('1 MiB upload', 'PUT', '/big-up', 200, `Content-Length: ${BIG.length}\r\n`, BIG),
  one('slow upstream', 'GET', '/slow', 200),
  one('103 Early Hints, then 200', 'GET', '/early-hints', 200),
  one('204', 'GET', '/no-content', 204),
  one('304', 'GET', '/not-modified', 304),
  one('chunked with trailers', 'GET', '/trailers', 200),
  one('a body delimited by the close', 'GET', '/close-delimited', 200),
  one('Connection: close', 'GET', '/connection-close', 200),
  one('Keep-Alive: timeout=1 (too short to reuse)', 'GET', '/short-hint', 200),
  one('GET after the short hint (a new connection)', 'GET', '/get', 200),
  one('keep-alive answer, then a FIN', 'GET', '/closes-after', 200),
  one('GET after the FIN (a new connection)', 'GET', '/get', 200),
  one('bytes after the answer', 'GET', '/stray', 200),
  one('GET after them (a new connection)', 'GET', '/get', 200),
  one('reset mid-body', 'GET', '/reset-mid-body', 200),
  one('never answers (timeout)', 'GET', '/silent', 504),
  {
    name: 'refused port',
    url: at(refused, '/refused'),
    send: raw(head('GET', at(refused, '/refused'))),
    status: 502,
  },
  one(
    'answer before the request body is all sent',
    'POST',
    '/early-answer',
    413,
    'Content-Length: 100000\r\n',
    'x'.repeat(10),
  ),
  one('a malformed answer', 'GET', '/bad-response', 502),
  one('GET (leaves an idle connection)', 'GET', '/get', 200),
  differs(
    one('the idle connection reset when reused', 'GET', '/stale', 502),
    200,
    'a bodiless idempotent request is sent again on a new connection (RFC 9110 § 9.2.2)',
  ),
  differs(
    one('an unasked 100 Continue, then 200', 'GET', '/continue', 502),
    200,
    'a client must parse 1xx answers it did not expect (RFC 9110 § 15.2); undici fails them',
  ),
  differs(
    one('304 with the Content-Length of what it stands for', 'GET', '/not-modified-length', 304),
    304,
    'a 304 may carry the length of what it stands for (RFC 9110 § 8.6); undici reads it as a body cut short, and the agent gets no answer',
  ),
];

describe('engine: lean forwards plain HTTP/1.1 as engine: node does', () => {
  it.each(rows)('$name', async (row) => {
    const node = await through(gateways.node, row.url, row.send);
    const lean = await through(gateways.lean, row.url, row.send);
    expect(node.outcome.status).toBe(row.status);
    expect(lean.outcome.status).toBe(row.lean?.status ?? row.status);
    if (row.lean !== undefined) {
      // The same request went up (twice, on a new connection, when sent again).
      for (const sent of lean.upstream) expect(sent.bytes).toBe(node.upstream[0]?.bytes);
      expect(node.outcome.error).toEqual(expect.any(String));
      expect(lean.outcome.error).toBeUndefined();
      expect(lean.answer.head).toMatch(new RegExp(`^HTTP/1\\.1 ${row.lean.status} `));
      return;
    }
    expect(lean.upstream).toEqual(node.upstream);
    expect(lean.answer).toEqual(node.answer);
    expect(lean.outcome).toEqual(node.outcome);
  });
});

describe('a reload', () => {
  it('applies engine to the requests after it (an unasked 100 Continue: 502, then 200)', async () => {
    const admin = 'admin-token-for-engine-reload-0123';
    const g = await fileGateway(admin, config('node'));
    const ask = async () =>
      (await exchange(g.gw.proxy.port, head('GET', u('/continue')), { timeoutMs: 10_000 })).status;
    expect(await ask()).toBe(502);
    g.write(config('lean'));
    const reloaded = await adminClient(g.gw.admin.port, admin).post('/api/reload', {});
    expect(reloaded.status).toBe(200);
    expect(reloaded.json.restartNeeded).toEqual([]);
    expect(await ask()).toBe(200);
  });
});
