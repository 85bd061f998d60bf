import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Hello } from '../../src/tls/client-hello.js';
import { MAX_HELLO, parseClientHello } from '../../src/tls/client-hello.js';
import { captureClientHello } from '../helpers/tls.js';

/** ClientHellos from a real Node client, and hand-made ones (RFC 8446 § 4.1.2 layout). */
const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const u24 = (n: number) => Buffer.from([n >> 16, (n >> 8) & 0xff, n & 0xff]);
const ext = (type: number, data: Buffer) => Buffer.concat([u16(type), u16(data.length), data]);
const names = (...list: [number, string][]) => {
  const entries = list.map(([type, name]) =>
    Buffer.concat([Buffer.from([type]), u16(name.length), Buffer.from(name, 'latin1')]),
  );
  const all = Buffer.concat(entries);
  return ext(0, Buffer.concat([u16(all.length), all]));
};
const sni = (name: string) => names([0, name]);

/** A ClientHello handshake message with these extensions (null: no extensions block). */
function message(extensions: Buffer[] | null): Buffer {
  const fixed = Buffer.concat([
    Buffer.from([3, 3]),
    randomBytes(32),
    Buffer.from([0]),
    Buffer.from([0, 2, 0x13, 0x01]),
    Buffer.from([1, 0]),
  ]);
  const exts = extensions === null ? null : Buffer.concat(extensions);
  const body = exts === null ? fixed : Buffer.concat([fixed, u16(exts.length), exts]);
  return Buffer.concat([Buffer.from([1]), u24(body.length), body]);
}

/** `msg` in handshake records of at most `size` bytes each. */
function records(msg: Buffer, size = 1 << 14): Buffer {
  const out: Buffer[] = [];
  for (let at = 0; at < msg.length; at += size) {
    const chunk = msg.subarray(at, at + size);
    out.push(Buffer.from([0x16, 3, 1]), u16(chunk.length), chunk);
  }
  return Buffer.concat(out);
}

const named = (name: string | null): Hello => ({ kind: 'hello', sni: name });
const kind = (k: Hello['kind']) => expect.objectContaining({ kind: k });

describe('a ClientHello from a real client', () => {
  it.each([
    ['a host name', 'api.example.com' as string | null],
    ['no name (an IP address is never sent)', null],
  ])('%s', async (_, servername) => {
    const bytes = await captureClientHello(servername);
    expect(parseClientHello(bytes)).toEqual(named(servername));
  });

  it('every prefix asks for more; re-cut into one-byte records it reads the same', async () => {
    const bytes = await captureClientHello('front.example');
    for (let n = 0; n < bytes.length; n++) {
      expect(parseClientHello(bytes.subarray(0, n))).toEqual({ kind: 'more' });
    }
    const msg = bytes.subarray(5, 5 + bytes.readUInt16BE(3));
    expect(parseClientHello(records(msg, 1))).toEqual(named('front.example'));
    // What follows the hello (0-RTT data, say) is not the hello's business.
    const after = Buffer.concat([bytes, Buffer.from([0x17, 3, 3, 0, 1, 0])]);
    expect(parseClientHello(after)).toEqual(named('front.example'));
  });
});

describe('hand-made ClientHellos', () => {
  const padding = ext(21, Buffer.alloc(16 * 1024));
  const garbled = (edit: (b: Buffer) => void) => {
    const b = records(message([sni('a.example')]));
    edit(b);
    return b;
  };
  it.each<[string, Buffer, Hello | ReturnType<typeof kind>]>([
    ['one name', records(message([sni('a.example')])), named('a.example')],
    [
      'a trailing dot, upper case: as sent',
      records(message([sni('A.Example.')])),
      named('A.Example.'),
    ],
    ['no server_name extension', records(message([ext(10, u16(0))])), named(null)],
    ['no extensions at all (TLS 1.2)', records(message(null)), named(null)],
    [
      '16 KiB of padding: two records',
      records(message([padding, sni('big.example')])),
      named('big.example'),
    ],
    [
      'two host names',
      records(message([names([0, 'a.example'], [0, 'b.example'])])),
      kind('unjudgeable'),
    ],
    ['a name of unknown type', records(message([names([1, 'a.example'])])), kind('unjudgeable')],
    [
      'ECH (outer name only)',
      records(message([sni('public.example'), ext(0xfe0d, Buffer.alloc(40))])),
      kind('unjudgeable'),
    ],
    [
      'server_name twice',
      records(message([sni('a.example'), sni('b.example')])),
      kind('malformed'),
    ],
    ['an IPv4 literal', records(message([sni('127.0.0.1')])), kind('malformed')],
    ['a short IPv4 spelling', records(message([sni('127.1')])), kind('malformed')],
    ['a hex IPv4 spelling', records(message([sni('0x7f000001')])), kind('malformed')],
    ['an IPv6 literal', records(message([sni('::1')])), kind('malformed')],
    ['a NUL in the name', records(message([sni('a.example\0.evil')])), kind('malformed')],
    ['an empty name list', records(message([ext(0, u16(0))])), kind('malformed')],
    [
      'a name length past the list',
      records(message([ext(0, Buffer.from([0, 4, 0, 0, 9, 0x61]))])),
      kind('malformed'),
    ],
    [
      'an extension length that lies',
      garbled((b) => b.writeUInt16BE(0xffff, b.length - 13)),
      kind('malformed'),
    ],
    [
      'a handshake length longer than sent, then another record type',
      Buffer.concat([
        garbled((b) => b.writeUIntBE(b.length, 6, 3)),
        Buffer.from([0x17, 3, 3, 0, 1, 0]),
      ]),
      kind('malformed'),
    ],
    [
      'a handshake length shorter than its record',
      garbled((b) => b.writeUIntBE(b.length - 20, 6, 3)),
      kind('malformed'),
    ],
    ['a record over 2^14', Buffer.from([0x16, 3, 3, 0x40, 1]), kind('malformed')],
    ['an empty record', Buffer.from([0x16, 3, 3, 0, 0]), kind('malformed')],
    ['not TLS 3.x', garbled((b) => (b[1] = 2)), kind('malformed')],
    ['a ServerHello', garbled((b) => (b[5] = 2)), kind('malformed')],
    [
      'a hello over the bound',
      Buffer.concat([Buffer.from([0x16, 3, 3, 0, 4, 1]), u24(MAX_HELLO + 1)]),
      kind('malformed'),
    ],
    ['a session id over 32 bytes', garbled((b) => (b[5 + 4 + 34] = 33)), kind('malformed')],
  ])('%s', (_, bytes, expected) => {
    expect(parseClientHello(bytes)).toEqual(expected);
  });
});
