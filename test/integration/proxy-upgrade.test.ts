import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { exchange, openRaw, roundTrip, startTcpServer } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import type { OutcomeRecord } from '../../src/journal/records.js';

/**
 * HTTP Upgrade through the proxy (RFC 9110 § 7.8): checked like any request, and nothing the
 * client sends after it reaches the upstream before its `101`. The upstream is a raw TCP server
 * that records every byte, and what it had received when it answered.
 */
interface Conn {
  got: string;
  /** What it had received when it answered; null before. */
  atAnswer: string | null;
  closed: boolean;
  answer(text: string | Buffer): void;
}

type OnRequest = (conn: Conn) => void;
let onRequest: OnRequest = () => {};
const conns: Conn[] = [];
const upstream = await startTcpServer((socket) => {
  let requested = false;
  const conn: Conn = {
    got: '',
    atAnswer: null,
    closed: false,
    answer: (text) => {
      conn.atAnswer = conn.got;
      socket.write(text);
    },
  };
  conns.push(conn);
  socket.on('data', (d: Buffer) => {
    conn.got += d.toString('latin1');
    const end = conn.got.indexOf('\r\n\r\n');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(conn.got)?.[1] ?? 0);
    if (!requested && end >= 0 && conn.got.length >= end + 4 + length) {
      requested = true;
      onRequest(conn);
    }
  });
  socket.once('close', () => (conn.closed = true));
});
const P = upstream.port;
const SWITCH = 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n';
const TOKEN = 'agent-1-secret-token-0123456789';

const { start, keep } = gatewayPerTest({
  network: { allow: [`127.0.0.1:${P}`], allowPrivate: ['127.0.0.1/32'] },
});

const upgrade = (opts: { method?: string; url?: string; extra?: string } = {}) =>
  `${opts.method ?? 'GET'} ${opts.url ?? `http://127.0.0.1:${P}/ws`} HTTP/1.1\r\n` +
  `Host: 127.0.0.1:${P}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${opts.extra ?? ''}\r\n`;

/** Resolves with the next connection whose request (head and body) the upstream has read. */
function nextRequest(then: OnRequest = () => {}): Promise<Conn> {
  return new Promise((resolve) => {
    onRequest = (conn) => {
      then(conn);
      resolve(conn);
    };
  });
}

/** The one request the upstream received: its head ends the bytes, nothing after it. */
const headOnly = (got: string | null) => (got ?? '').indexOf('\r\n\r\n') === (got ?? '').length - 4;

async function outcome(g: TestGateway): Promise<OutcomeRecord> {
  await waitFor(() => g.records().some((r) => r.type === 'outcome'));
  expect(g.records().map((r) => r.type)).toEqual(['event', 'outcome']);
  return g.records().find((r) => r.type === 'outcome') as OutcomeRecord;
}

describe('an upgrade is a request until the upstream answers 101', () => {
  it('answered 200 by a keep-alive upstream: the client gets the 200, pipelined requests never reach the upstream', async () => {
    const g = await start();
    const got = nextRequest((c) =>
      c.answer('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok'),
    );
    const second = `GET http://127.0.0.1:${P}/second HTTP/1.1\r\nHost: 127.0.0.1:${P}\r\n\r\n`;
    const res = await exchange(g.gw.proxy.port, upgrade() + second + second);
    expect(res).toMatchObject({ status: 200, body: 'ok', closed: true });
    expect(res.headers.connection).toBe('close');
    const conn = await got;
    await waitFor(() => conn.closed);
    expect(conn.got).toMatch(/^GET \/ws HTTP\/1\.1\r\n/);
    expect(headOnly(conn.got)).toBe(true);
    // Its head counts as sent up, as a request's does (volume rules): every byte the upstream got.
    expect(await outcome(g)).toMatchObject({ status: 200, bytesDown: 2, bytesUp: conn.got.length });
  });

  it('bytes sent right after the upgrade reach the upstream only after its 101', async () => {
    const g = await start();
    const got = nextRequest();
    const opened = openRaw(g.gw.proxy.port, upgrade() + 'EARLY');
    const conn = await got;
    // The 101 carries a latin1 field byte and is followed at once by the new protocol's bytes.
    conn.answer(Buffer.from(`${SWITCH}X-Name: caf\xe9\r\n\r\nwelcome`, 'latin1'));
    const t = keep(await opened);
    expect(headOnly(conn.atAnswer)).toBe(true);
    expect(t.status).toBe(101);
    expect(t.headers).toMatchObject({
      upgrade: 'websocket',
      'x-name': 'caf\xe9',
      via: '1.1 trajgate',
    });
    const rest =
      t.rest.length >= 7
        ? ''
        : (await roundTrip(t.socket, '', (s) => s.length >= 7 - t.rest.length)).got;
    expect(t.rest + rest).toBe('welcome');
    await waitFor(() => conn.got.endsWith('\r\n\r\nEARLY'));
    t.socket.destroy();
    expect(await outcome(g)).toMatchObject({
      status: 101,
      bytesUp: conn.got.length,
      bytesDown: 7,
    });
  });

  it('a Content-Length body is sent as exactly that many bytes; what follows waits for the 101', async () => {
    const g = await start();
    const got = nextRequest((c) => c.answer(`${SWITCH}\r\n`));
    const socket = connect(g.gw.proxy.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(upgrade({ method: 'POST', extra: 'Content-Length: 5\r\n' }) + 'hel');
    await waitFor(() => conns.at(-1)?.got.endsWith('\r\n\r\nhel') === true);
    socket.write('loEXTRA');
    const conn = await got;
    expect(conn.atAnswer).toMatch(/\r\ncontent-length: 5\r\n(.*\r\n)*\r\nhello$/i);
    await waitFor(() => conn.got.endsWith('\r\n\r\nhelloEXTRA'));
    socket.destroy();
    expect(await outcome(g)).toMatchObject({ status: 101, bytesUp: conn.got.length });
  });

  it('an upstream that switches before the body was sent → 502, nothing relayed', async () => {
    const g = await start();
    // The body never comes, so the request is never complete: the head is what it waits for.
    const opened = openRaw(
      g.gw.proxy.port,
      upgrade({ method: 'POST', extra: 'Content-Length: 5\r\n' }),
    );
    await waitFor(() => (conns.at(-1)?.got ?? '').endsWith('\r\n\r\n'));
    (conns.at(-1) as Conn).answer(`${SWITCH}\r\n`);
    const t = keep(await opened);
    expect(t.status).toBe(502);
    expect(t.rest).toMatch(/switched protocols before the body was sent/);
    expect(await outcome(g)).toMatchObject({ status: 502 });
  });

  it('a 101 that names no protocol (RFC 9110 § 15.2.2) → 502, nothing relayed', async () => {
    const g = await start();
    const got = nextRequest((c) => c.answer('HTTP/1.1 101 Switching Protocols\r\n\r\nnew'));
    const res = await exchange(g.gw.proxy.port, upgrade() + 'EARLY');
    expect(res.status).toBe(502);
    expect(res.body).toMatch(/switched protocols without naming one/);
    const conn = await got;
    await waitFor(() => conn.closed);
    expect(headOnly(conn.got)).toBe(true);
    expect(await outcome(g)).toMatchObject({ status: 502 });
  });
});

describe('bad upgrades: the status and reason of a plain request, one journal record, upstream untouched', () => {
  const rows: { name: string; bytes: () => string; status: number; reason: RegExp }[] = [
    {
      name: 'userinfo in the URL',
      bytes: () => upgrade({ url: `http://user:pw@127.0.0.1:${P}/ws` }),
      status: 400,
      reason: /^credentials in the request URL/,
    },
    {
      name: 'two Host fields',
      bytes: () => upgrade({ extra: `Host: 127.0.0.1:${P}\r\n` }),
      status: 400,
      reason: /^more than one Host field$/,
    },
    {
      name: 'origin-form',
      bytes: () => upgrade({ url: '/ws' }),
      status: 400,
      reason: /send absolute-form requests/,
    },
    {
      name: 'Transfer-Encoding: gzip',
      bytes: () => upgrade({ extra: 'Transfer-Encoding: gzip\r\n' }) + 'abc',
      status: 501,
      reason: /^transfer coding "gzip" is not supported/,
    },
    {
      name: 'a chunked body',
      bytes: () =>
        upgrade({ method: 'POST', extra: 'Transfer-Encoding: chunked\r\n' }) +
        `5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n`,
      status: 501,
      reason: /^a chunked request body on an Upgrade is not supported/,
    },
    {
      name: 'an expectation other than 100-continue',
      bytes: () => upgrade({ extra: 'Expect: teapot\r\n' }),
      status: 417,
      reason: /^expectation "teapot" is not supported/,
    },
  ];

  it.each(rows)('$name → $status', async (row) => {
    const g = await start();
    const before = upstream.connections;
    const res = await exchange(g.gw.proxy.port, row.bytes());
    expect(res.status).toBe(row.status);
    expect(res.closed).toBe(true);
    const records = g.records();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ type: 'refusal', status: row.status });
    expect((records[0] as { reason: string }).reason).toMatch(row.reason);
    const body = Buffer.from(res.body, 'latin1').toString();
    expect(body).toBe(`trajgate: ${(records[0] as { reason: string }).reason}\n`);
    // One Connection field, however the refusal asked to close (RFC 9110 § 7.6.1).
    expect(res.text.match(/^connection:/gim)).toHaveLength(1);
    expect(upstream.connections).toBe(before);
  });

  it('missing credentials with agents configured → 407 with Proxy-Authenticate', async () => {
    const g = await start({ agents: [{ id: 'agent-1', token: TOKEN }] });
    const before = upstream.connections;
    const res = await exchange(g.gw.proxy.port, upgrade());
    expect(res.status).toBe(407);
    expect(res.headers['proxy-authenticate']).toBe('Basic realm="trajgate"');
    expect(g.records()).toMatchObject([{ type: 'refusal', status: 407 }]);
    expect(g.records()).toHaveLength(1);
    expect(upstream.connections).toBe(before);
  });
});
