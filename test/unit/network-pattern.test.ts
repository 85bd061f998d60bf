import { describe, expect, it } from 'vitest';
import { parseNetworkTarget } from '../../src/event/network-target.js';
import { matchesNetwork, parseNetworkPattern } from '../../src/event/network-pattern.js';

// [pattern, target, method, matches]
const cases: [string, string, string | undefined, boolean][] = [
  ['example.com', 'https://example.com/x', undefined, true],
  ['example.com', 'http://example.com/x', undefined, true],
  ['example.com', 'example.com:443', undefined, true],
  ['example.com', 'example.com:80', undefined, true],
  ['example.com', 'example.com:8443', undefined, false],
  ['example.com', 'https://sub.example.com/', undefined, false],
  ['example.com', 'https://example.com.evil.test/', undefined, false],
  ['example.com', 'https://evilexample.com/', undefined, false],
  ['EXAMPLE.com.', 'https://Example.COM/', undefined, true],
  ['example.com', 'https://example.com./', undefined, true],
  ['*.example.org', 'https://a.example.org/', undefined, true],
  ['*.example.org', 'https://a.b.example.org/', undefined, true],
  ['*.example.org', 'https://example.org/', undefined, false],
  ['*.example.org', 'https://xexample.org/', undefined, false],
  ['*.example.org:8443', 'a.example.org:8443', undefined, true],
  ['*.example.org:8443', 'a.example.org:443', undefined, false],
  ['https://example.com', 'https://example.com/', undefined, true],
  ['https://example.com', 'http://example.com/', undefined, false],
  ['https://example.com', 'http://example.com:443/', undefined, false],
  ['https://example.com', 'example.com:443', undefined, true],
  ['http://example.com', 'example.com:443', undefined, false],
  ['example.com/v1/', 'https://example.com/v1/items', undefined, true],
  ['example.com/v1/', 'https://example.com/v10/items', undefined, false],
  ['example.com/v1/', 'https://example.com/v1/../admin', undefined, false],
  ['example.com/v1/', 'https://example.com/v1/%2e%2e/admin', undefined, false],
  ['example.com/v1/', 'example.com:443', undefined, false],
  ['GET example.com', 'https://example.com/', 'GET', true],
  ['GET example.com', 'https://example.com/', 'post', false],
  ['GET example.com', 'https://example.com/', undefined, false],
  ['GET example.com', 'example.com:443', undefined, false],
  ['get https://api.example.com/v1/', 'https://api.example.com/v1/x', 'GET', true],
  // internationalised names compare in punycode
  ['bücher.example', 'https://xn--bcher-kva.example/', undefined, true],
  ['xn--bcher-kva.example', 'https://BÜCHER.example/', undefined, true],
  // an IP only matches itself, whatever its spelling in the target
  ['127.0.0.1:8080', 'http://127.1:8080/', undefined, true],
  ['127.0.0.1:8080', 'http://0x7f.0.0.1:8080/', undefined, true],
  ['127.0.0.1:8080', 'http://2130706433:8080/', undefined, true],
  ['127.0.0.1:8080', 'http://127.0.0.2:8080/', undefined, false],
  ['[::1]:8080', 'http://[0:0:0:0:0:0:0:1]:8080/', undefined, true],
  ['[::1]:8080', '[::1]:8080', undefined, true],
  ['127.0.0.1', 'http://localhost/', undefined, false],
  // a tunnel protocol's scheme: its default port, tunnels only (never an HTTP request)
  ['ssh://git.example.com', 'git.example.com:22', undefined, true],
  ['ssh://git.example.com', 'git.example.com:2222', undefined, false],
  ['ssh://git.example.com:2222', 'git.example.com:2222', undefined, true],
  ['ssh://git.example.com:443', 'https://git.example.com/', undefined, false],
  ['postgres://db.example.com', 'db.example.com:5432', undefined, true],
  ['tls://mail.example.com:465', 'mail.example.com:465', undefined, true],
];

describe('network patterns', () => {
  it.each(cases)('%s ~ %s (%s) → %s', (pattern, target, method, expected) => {
    const p = parseNetworkPattern(pattern);
    expect(matchesNetwork(p, parseNetworkTarget(target, method))).toBe(expected);
  });

  it.each([
    ['', 'expected [METHOD ][scheme://]host'],
    ['*', '"*" is only allowed as a leading "*." in the host'],
    ['a.*.example.com', '"*" is only allowed'],
    ['*.127.0.0.1', 'cannot prefix an IP'],
    ['example.com:0', 'out of range'],
    ['example.com:70000', 'out of range'],
    ['gopher://example.com', 'has no default port'],
    ['exa mple.com', 'unknown method "exa"'],
    ['GET  a b', 'expected [METHOD ][scheme://]host'],
    ['user@example.com', 'invalid host'],
    ['tls://mail.example.com', 'scheme "tls" has no default port: name one'],
    ['ssh://git.example.com/repo.git', 'a ssh:// pattern names a tunnel: it has no method or path'],
    ['GET postgres://db.example.com', 'a postgres:// pattern names a tunnel'],
    ['constructor://example.com', 'scheme "constructor" has no default port'],
  ])('rejects %j (%s)', (pattern, why) => {
    expect(() => parseNetworkPattern(pattern)).toThrow(why);
  });
});

describe('network targets', () => {
  it.each([
    [
      'https://Example.COM./a/../b',
      { scheme: 'https', host: 'example.com', port: 443, path: '/b' },
    ],
    ['http://127.1/', { host: '127.0.0.1', port: 80 }],
    ['http://[0:0:0:0:0:0:0:1]:81/', { host: '::1', port: 81 }],
    ['ws://example.com/socket', { scheme: 'ws', port: 80 }],
    ['EXAMPLE.com:443', { scheme: null, host: 'example.com', port: 443, path: null }],
    ['[::FFFF:127.0.0.1]:443', { host: '::ffff:7f00:1', port: 443 }],
  ])('%s', (target, expected) => {
    expect(parseNetworkTarget(target)).toMatchObject(expected);
  });

  it.each([
    ['example.com', 'neither an absolute URL nor host:port'],
    ['example.com:99999', 'port out of range'],
    ['https://exa mple.com/', 'invalid URL'],
    ['gopher://example.com/', 'has no default'],
    [':443', 'invalid host'],
  ])('rejects %j', (target, why) => {
    expect(() => parseNetworkTarget(target)).toThrow(why);
  });
});
