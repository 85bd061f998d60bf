import { describe, expect, it } from 'vitest';
import { AddressPolicy } from '../../src/action/addresses.js';
import { TrajgateError } from '../../src/errors.js';

// Teredo server 65.54.227.120 (4136:e378); client address stored as bitwise NOT (RFC 4380).
const TEREDO_LOOPBACK_CLIENT = '2001:0:4136:e378:8000:63bf:80ff:fffe'; // client 127.0.0.1
const TEREDO_PUBLIC_CLIENT = '2001:0:4136:e378:8000:63bf:f7f7:f7f7'; // client 8.8.8.8
const TEREDO_PRIVATE_SERVER = '2001:0:a00:1:8000:63bf:f7f7:f7f7'; // server 10.0.0.1

/** The canonical text the policy reads an IP literal as, or null if it is not one. */
function canonicalIp(text: string): string | null {
  const verdict = new AddressPolicy([]).check(text);
  return verdict.category === 'invalid' ? null : verdict.address;
}

describe('IP literals read in canonical form', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f.0.0.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0X7F.1', '127.0.0.1'],
    ['1.2.3', '1.2.0.3'], // inet_aton / WHATWG: the last part fills the remaining bytes
    ['127.0.0.1.', '127.0.0.1'], // WHATWG drops one trailing dot
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['::0001', '::1'],
    ['::', '::'],
    ['FE80::1', 'fe80::1'],
    ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'], // first longest run
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'],
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'], // a single zero group is not compressed
    ['2606:4700:4700::1111', '2606:4700:4700::1111'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalIp(input)).toBe(expected);
  });

  it.each([
    'example.com',
    'localhost',
    'deadbeef', // hex without 0x is a host name to WHATWG
    'face.b00c',
    '',
    '256.0.0.1',
    '1.2.3.4.5',
    '08.0.0.1',
    '1.2.3.4/8',
    '1.2.3.4:80',
    'user@1.2.3.4',
    ' 1.2.3.4',
    '[1.2.3.4]',
    '[::1',
    'fe80::1%eth0',
    '[fe80::1%25eth0]',
    '1:2:3:4:5:6:7:8:9',
    '::ffff:1.2.3',
  ])('%j → null', (input) => {
    expect(canonicalIp(input)).toBeNull();
  });

  it('agrees with the WHATWG URL parser on IPv6', () => {
    for (const ip of [
      '0:0:0:0:1:0:0:0',
      '1::',
      '1:2:3:4:5:6::',
      '0:0:1::',
      '::1.2.3.4',
      'A:B::C',
    ]) {
      expect(canonicalIp(ip)).toBe(new URL(`http://[${ip}]/`).hostname.slice(1, -1));
    }
  });
});

describe('AddressPolicy.check with no exemptions', () => {
  const policy = new AddressPolicy([]);

  it.each([
    ['10.0.0.1', 'private', '10.0.0.1'],
    ['172.16.5.4', 'private', '172.16.5.4'],
    ['172.31.255.255', 'private', '172.31.255.255'],
    ['192.168.1.1', 'private', '192.168.1.1'],
    ['169.254.169.254', 'link-local', '169.254.169.254'],
    ['127.0.0.1', 'loopback', '127.0.0.1'],
    ['127.1', 'loopback', '127.0.0.1'],
    ['0x7f.0.0.1', 'loopback', '127.0.0.1'],
    ['2130706433', 'loopback', '127.0.0.1'],
    ['0.0.0.0', 'unspecified', '0.0.0.0'],
    ['0.1.2.3', 'unspecified', '0.1.2.3'],
    ['255.255.255.255', 'broadcast', '255.255.255.255'],
    ['100.64.0.1', 'cgnat', '100.64.0.1'],
    ['100.127.255.255', 'cgnat', '100.127.255.255'],
    ['224.0.0.1', 'multicast', '224.0.0.1'],
    ['239.255.255.250', 'multicast', '239.255.255.250'],
    ['240.0.0.1', 'reserved', '240.0.0.1'],
    ['192.0.0.8', 'reserved', '192.0.0.8'],
    ['198.18.0.1', 'reserved', '198.18.0.1'],
    ['198.19.255.255', 'reserved', '198.19.255.255'],
    ['192.0.2.1', 'reserved', '192.0.2.1'],
    ['198.51.100.7', 'reserved', '198.51.100.7'],
    ['203.0.113.9', 'reserved', '203.0.113.9'],
    ['::1', 'loopback', '::1'],
    ['0:0:0:0:0:0:0:1', 'loopback', '::1'],
    ['[::1]', 'loopback', '::1'],
    ['::', 'unspecified', '::'],
    ['fe80::1', 'link-local', 'fe80::1'],
    ['febf::1', 'link-local', 'febf::1'],
    ['fd00::1', 'private', 'fd00::1'],
    ['fc00::1', 'private', 'fc00::1'],
    ['ff02::1', 'multicast', 'ff02::1'],
    ['fec0::1', 'reserved', 'fec0::1'],
    ['100::1', 'reserved', '100::1'],
    ['2001:db8::1', 'reserved', '2001:db8::1'],
    ['3fff::1', 'reserved', '3fff::1'],
    ['2001:2::1', 'reserved', '2001:2::1'],
    ['1::1', 'reserved', '1::1'], // outside 2000::/3
    ['::ffff:0:7f00:1', 'reserved', '::ffff:0:7f00:1'], // SIIT form: not routable
  ])('%s is forbidden as %s', (input, category, address) => {
    expect(policy.check(input)).toEqual({ allowed: false, category, address });
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback', '::ffff:7f00:1', 'IPv4-mapped (RFC 4291) 127.0.0.1'],
    ['::ffff:7f00:1', 'loopback', '::ffff:7f00:1', 'IPv4-mapped (RFC 4291) 127.0.0.1'],
    [
      '::ffff:a9fe:a9fe',
      'link-local',
      '::ffff:a9fe:a9fe',
      'IPv4-mapped (RFC 4291) 169.254.169.254',
    ],
    ['::ffff:0.0.0.0', 'unspecified', '::ffff:0:0', 'IPv4-mapped (RFC 4291) 0.0.0.0'],
    ['::127.0.0.1', 'loopback', '::7f00:1', 'IPv4-compatible (RFC 4291) 127.0.0.1'],
    ['::a00:1', 'private', '::a00:1', 'IPv4-compatible (RFC 4291) 10.0.0.1'],
    ['64:ff9b::a9fe:a9fe', 'link-local', '64:ff9b::a9fe:a9fe', 'NAT64 (RFC 6052) 169.254.169.254'],
    ['64:ff9b::127.0.0.1', 'loopback', '64:ff9b::7f00:1', 'NAT64 (RFC 6052) 127.0.0.1'],
    ['64:ff9b:1::a00:1', 'private', '64:ff9b:1::a00:1', 'NAT64 local-use (RFC 8215) 10.0.0.1'],
    [
      '64:ff9b:1::808:808', // the prefix itself is local-use, whatever it embeds
      'reserved',
      '64:ff9b:1::808:808',
      'NAT64 local-use (RFC 8215) 8.8.8.8',
    ],
    ['2002:7f00:1::1', 'loopback', '2002:7f00:1::1', '6to4 (RFC 3056) 127.0.0.1'],
    ['2002:c0a8:101::1', 'private', '2002:c0a8:101::1', '6to4 (RFC 3056) 192.168.1.1'],
    [
      TEREDO_LOOPBACK_CLIENT,
      'loopback',
      TEREDO_LOOPBACK_CLIENT,
      'Teredo (RFC 4380) 65.54.227.120, 127.0.0.1',
    ],
    [
      TEREDO_PRIVATE_SERVER,
      'private',
      TEREDO_PRIVATE_SERVER,
      'Teredo (RFC 4380) 10.0.0.1, 8.8.8.8',
    ],
  ])('%s embeds a forbidden IPv4 (%s)', (input, category, address, note) => {
    expect(policy.check(input)).toEqual({ allowed: false, category, address, note });
  });

  it.each([
    ['93.184.216.34', '93.184.216.34'],
    ['8.8.8.8', '8.8.8.8'],
    ['172.32.0.1', '172.32.0.1'], // just past 172.16.0.0/12
    ['100.128.0.1', '100.128.0.1'], // just past 100.64.0.0/10
    ['2606:4700:4700::1111', '2606:4700:4700::1111'],
    ['2001:4860:4860::8888', '2001:4860:4860::8888'],
  ])('%s is public', (input, address) => {
    expect(policy.check(input)).toEqual({ allowed: true, category: 'public', address });
  });

  it.each([
    ['::ffff:8.8.8.8', '::ffff:808:808', 'IPv4-mapped (RFC 4291) 8.8.8.8'],
    ['64:ff9b::808:808', '64:ff9b::808:808', 'NAT64 (RFC 6052) 8.8.8.8'],
    ['2002:0808:0808::1', '2002:808:808::1', '6to4 (RFC 3056) 8.8.8.8'],
    [TEREDO_PUBLIC_CLIENT, TEREDO_PUBLIC_CLIENT, 'Teredo (RFC 4380) 65.54.227.120, 8.8.8.8'],
  ])('%s embeds a public IPv4', (input, address, note) => {
    expect(policy.check(input)).toEqual({ allowed: true, category: 'public', address, note });
  });

  it.each(['example.com', 'localhost', '', 'fe80::1%eth0', '1.2.3.4:80', '[127.0.0.1]'])(
    '%j is invalid',
    (input) => {
      expect(policy.check(input)).toEqual({ allowed: false, category: 'invalid', address: input });
    },
  );
});

describe('AddressPolicy allowPrivate', () => {
  it.each([
    [['127.0.0.0/8'], '127.0.0.1', true],
    [['127.0.0.0/8'], '127.1', true],
    [['127.0.0.0/8'], '::ffff:127.0.0.1', true],
    [['127.0.0.0/8'], '64:ff9b::7f00:1', true],
    [['127.0.0.0/8'], '10.0.0.1', false],
    [['127.0.0.0/8'], '::1', false],
    [['127.0.0.0/8'], TEREDO_LOOPBACK_CLIENT, true],
    [['127.0.0.0/8'], TEREDO_PRIVATE_SERVER, false],
    [['127.0.0.1'], '127.0.0.1', true], // a bare address is a /32
    [['127.0.0.1'], '127.0.0.2', false],
    [['10.0.0.0/8', '192.168.0.0/16'], '192.168.1.1', true],
    [['fd00::/8'], 'fd00::1', true],
    [['fd00::/8'], 'fc00::1', false],
    [['::1'], '0:0:0:0:0:0:0:1', true],
    [['10.0.0.0/8'], '64:ff9b:1::a00:1', false], // local-use prefix needs an IPv6 entry
    [['64:ff9b:1::/48'], '64:ff9b:1::a00:1', true],
    [['10.0.0.0/8'], 'example.com', false],
  ])('%j: %s allowed=%s', (allowPrivate, input, allowed) => {
    expect(new AddressPolicy(allowPrivate).check(input).allowed).toBe(allowed);
  });

  it('still reports the category of an exempted address', () => {
    expect(new AddressPolicy(['169.254.0.0/16']).check('169.254.169.254')).toEqual({
      allowed: true,
      category: 'link-local',
      address: '169.254.169.254',
    });
  });

  it.each(['10.0.0.0/33', 'fd00::/129', 'example.com/8', '10.0.0.0/8/8', '10.0.0.0/', ''])(
    'rejects the invalid CIDR %j',
    (cidr) => {
      expect(() => new AddressPolicy(['10.0.0.0/8', cidr])).toThrow(TrajgateError);
      expect(() => new AddressPolicy([cidr])).toThrow(`"${cidr}"`);
    },
  );
});
