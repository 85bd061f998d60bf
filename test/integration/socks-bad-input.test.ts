import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { SOCKS_LISTEN, socksAuth, socksRaw, socksRequest } from '../helpers/socks.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Bad SOCKS5 input through a raw socket: each gets the reply code that says what is wrong
 * (RFC 1928 § 6; RFC 1929 § 2), one refusal record with the reason, and the gateway serves on.
 */
const upstream = await startUpstream();
let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway({
    listen: SOCKS_LISTEN,
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    limits: { headerTimeout: '1s' },
  });
});
afterAll(() => g.stop());

const bytes = (...parts: (number[] | Buffer | string)[]) =>
  Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p as never))));
const NO_AUTH = [5, 1, 0];
const refused = (n: number) => [5, n, 0, 1, 0, 0, 0, 0, 0, 0];

interface Row {
  readonly name: string;
  readonly send: Buffer;
  /** Half-close after sending. */
  readonly end?: true;
  /** What the client is answered before the close. */
  readonly answer: number[];
  readonly status: number;
  readonly reason: RegExp;
  readonly method?: string;
  readonly target?: string;
}

const rows: Row[] = [
  {
    name: 'SOCKS4',
    send: bytes([4, 1, 0, 80, 127, 0, 0, 1, 0]),
    answer: [5, 0xff],
    status: 400,
    reason: /SOCKS4, which trajgate does not serve/,
  },
  {
    name: 'an HTTP request',
    send: bytes('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
    answer: [5, 0xff],
    status: 400,
    reason: /an HTTP request: send those to listen\.proxy/,
  },
  {
    name: 'no methods',
    send: bytes([5, 0]),
    answer: [5, 0xff],
    status: 400,
    reason: /offers no methods \(NMETHODS 0/,
  },
  {
    name: 'a sub-negotiation of version 2',
    send: bytes([5, 1, 2], [2, 1, 0x61, 1, 0x62]),
    answer: [5, 2, 1, 1],
    status: 400,
    reason: /sub-negotiation's version is 0x02, not 0x01/,
  },
  {
    name: 'an empty username',
    send: bytes([5, 1, 2], [1, 0, 0]),
    answer: [5, 2, 1, 1],
    status: 400,
    reason: /username is empty/,
  },
  {
    name: 'a request of version 4',
    send: bytes(NO_AUTH, [4, 1, 0, 1, 127, 0, 0, 1, 0, 80]),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /request's version is 0x04/,
  },
  {
    name: 'BIND',
    send: bytes(NO_AUTH, socksRequest('127.0.0.1', 80, 2)),
    answer: [5, 0, ...refused(7)],
    status: 501,
    reason: /BIND is not served/,
    method: 'BIND',
    target: '127.0.0.1:80',
  },
  {
    name: 'UDP ASSOCIATE',
    send: bytes(NO_AUTH, socksRequest('127.0.0.1', 53, 3)),
    answer: [5, 0, ...refused(7)],
    status: 501,
    reason: /UDP ASSOCIATE is not served/,
    method: 'UDP ASSOCIATE',
  },
  {
    name: 'an unknown command',
    send: bytes(NO_AUTH, socksRequest('a.test', 1, 9)),
    answer: [5, 0, ...refused(7)],
    status: 501,
    reason: /command 0x09 is not served/,
  },
  {
    name: 'an unknown address type',
    send: bytes(NO_AUTH, [5, 1, 0, 9, 1, 2, 3, 4]),
    answer: [5, 0, ...refused(8)],
    status: 400,
    reason: /address type 0x09/,
  },
  {
    name: 'a reserved byte set',
    send: bytes(NO_AUTH, [5, 1, 7, 1, 127, 0, 0, 1, 0, 80]),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /reserved byte is 0x07/,
  },
  {
    name: 'a name that is no host name',
    send: bytes(NO_AUTH, socksRequest('xn--zz', 443)),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /invalid host name "xn--zz"/,
  },
  {
    name: 'a name that is not UTF-8',
    send: bytes(NO_AUTH, [5, 1, 0, 3, 2, 0xff, 0xfe, 0, 80]),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /not UTF-8/,
  },
  {
    name: 'port 0',
    send: bytes(NO_AUTH, socksRequest('a.test', 0)),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /port out of range/,
  },
  {
    name: 'a name with a colon',
    send: bytes(NO_AUTH, socksRequest('a.test:99', 80)),
    answer: [5, 0, ...refused(1)],
    status: 400,
    reason: /has bytes no name has/,
  },
  {
    name: 'a greeting cut short',
    send: bytes([5, 3, 0]),
    end: true,
    answer: [],
    status: 400,
    reason: /closed the connection in the middle of its SOCKS5 greeting/,
  },
  {
    name: 'a request cut short',
    send: bytes(NO_AUTH, [5, 1, 0, 3, 10, 0x61]),
    end: true,
    answer: [5, 0],
    status: 400,
    reason: /in the middle of its SOCKS5 request/,
  },
  {
    name: 'methods promised past what was sent',
    send: bytes([5, 255, 0, 1]),
    answer: [],
    status: 408,
    reason: /no whole SOCKS5 greeting within 1000 ms \(limits\.headerTimeout\)/,
  },
  {
    name: 'credentials promised past what was sent',
    send: bytes([5, 1, 2], [1, 200, 0x61]),
    answer: [5, 2],
    status: 408,
    reason: /no whole SOCKS5 username\/password within/,
  },
];

const socksRefusals = () =>
  g.records().filter((r): r is RefusalRecord => r.type === 'refusal' && r.via === 'socks');

describe('bad SOCKS5 input', () => {
  it.each(rows)('$name: answered, one refusal record, closed', async (row) => {
    const before = socksRefusals().length;
    const r = await socksRaw(g.gw.socks?.port ?? 0, row.send, row.end ? { end: true } : {});
    expect(r.closed).toBe(true);
    expect([...r.got]).toEqual(row.answer);
    await waitFor(() => socksRefusals().length > before);
    const records = socksRefusals().slice(before);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ source: 'proxy', client: '127.0.0.1', status: row.status });
    expect(records[0]?.reason).toMatch(row.reason);
    if (row.method !== undefined) expect(records[0]?.method).toBe(row.method);
    if (row.target !== undefined) expect(records[0]?.target).toBe(row.target);
  });

  it('a connection that sends nothing and closes leaves no record; the listener serves on', async () => {
    const before = g.records().length;
    const r = await socksRaw(g.gw.socks?.port ?? 0, Buffer.alloc(0), { end: true });
    expect(r.closed).toBe(true);
    const ok = await curl([
      '--socks5-hostname',
      `127.0.0.1:${g.gw.socks?.port}`,
      `http://127.0.0.1:${upstream.port}/after`,
    ]);
    expect(ok.status).toBe(200);
    const added = g.records().slice(before);
    expect(added.filter((x) => x.type === 'refusal')).toEqual([]);
  });

  it('credentials where no agents are configured are not needed: any pass', async () => {
    const t = await socksRaw(
      g.gw.socks?.port ?? 0,
      bytes([5, 1, 2], socksAuth('anyone', 'anything'), socksRequest('127.0.0.1', upstream.port)),
      { want: 14 },
    );
    expect([...t.got.subarray(0, 6)]).toEqual([5, 2, 1, 0, 5, 0]);
    t.socket.destroy();
  });
});
