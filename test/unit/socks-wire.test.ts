import { describe, expect, it } from 'vitest';
import { plainRefusal, verdictRefusal } from '../../src/action/refusal.js';
import { replyCode } from '../../src/ingress/socks-answer.js';
import {
  parseCredentials,
  parseGreeting,
  parseRequest,
  reply,
} from '../../src/ingress/socks-wire.js';

const name = (host: string, port: number) =>
  Buffer.concat([
    Buffer.from([5, 1, 0, 3, host.length]),
    Buffer.from(host),
    Buffer.from([port >> 8, port & 255]),
  ]);

describe('SOCKS5 messages (RFC 1928, RFC 1929)', () => {
  it.each([
    ['greeting', parseGreeting, Buffer.from([5, 2, 0, 2])],
    ['credentials', parseCredentials, Buffer.from([1, 2, 0x61, 0x62, 1, 0x63])],
    ['request by name', parseRequest, name('a.test', 443)],
    ['request by IPv4', parseRequest, Buffer.from([5, 1, 0, 1, 10, 0, 0, 1, 1, 187])],
    ['request by IPv6', parseRequest, Buffer.from([5, 1, 0, 4, ...Array(15).fill(0), 1, 0, 22])],
  ] as const)('a %s is read whole, and any prefix of it asks for more', (_, parse, whole) => {
    for (let n = 0; n < whole.length; n++) expect(parse(whole.subarray(0, n)).kind).toBe('more');
    const done = parse(Buffer.concat([whole, Buffer.from('tunnel bytes')]));
    expect(done).toMatchObject({ kind: 'ok', used: whole.length });
  });

  it('reads what each carries', () => {
    expect(parseGreeting(Buffer.from([5, 2, 0, 2]))).toMatchObject({ value: new Set([0, 2]) });
    expect(parseCredentials(Buffer.from([1, 2, 0x61, 0x62, 1, 0x63]))).toMatchObject({
      value: { user: 'ab', password: 'c' },
    });
    expect(parseRequest(name('a.test', 443))).toMatchObject({
      value: { host: 'a.test', port: 443 },
    });
    expect(parseRequest(Buffer.from([5, 1, 0, 1, 10, 0, 0, 1, 1, 187]))).toMatchObject({
      value: { host: '10.0.0.1', port: 443 },
    });
    const v6 = parseRequest(Buffer.from([5, 1, 0, 4, ...Array(15).fill(0), 1, 0, 22]));
    expect(v6).toMatchObject({ value: { host: '[0:0:0:0:0:0:0:1]', port: 22 } });
  });

  it('a reply names where trajgate connected from, or 0.0.0.0:0', () => {
    expect([...reply(0, { address: '127.0.0.1', port: 40000 })]).toEqual([
      5, 0, 0, 1, 127, 0, 0, 1, 156, 64,
    ]);
    expect([...reply(2)]).toEqual([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    expect([...reply(0, { address: '::1', port: 1 })]).toEqual([
      5,
      0,
      0,
      4,
      ...Array(15).fill(0),
      1,
      0,
      1,
    ]);
  });

  it('a refusal is told by the closest reply code', () => {
    const refusedBy = (code: string) => Object.assign(new Error(code), { code });
    expect(replyCode(verdictRefusal('REVIEW', 'network', 'CONNECT a:1', 'why'))).toBe(0x02);
    expect(replyCode(plainRefusal(502, 'x'), refusedBy('ECONNREFUSED'))).toBe(0x05);
    expect(replyCode(plainRefusal(502, 'x'), refusedBy('ENETUNREACH'))).toBe(0x03);
    expect(replyCode(plainRefusal(504, 'timed out'), refusedBy('ETIMEDOUT'))).toBe(0x04);
    expect(replyCode(plainRefusal(502, 'x'), refusedBy('EHOSTUNREACH'))).toBe(0x04);
    expect(replyCode(plainRefusal(429, 'too many'))).toBe(0x01);
  });
});
