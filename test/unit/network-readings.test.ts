import { describe, expect, it } from 'vitest';
import { networkTargetProblem } from '../../src/event/network-readings.js';

/**
 * Network targets another client fetches: each spelling WHATWG URL and RFC 3986 (or a looser
 * client) can read as different hosts or paths is refused, with the reason that names why.
 */
const refused: [string, RegExp][] = [
  // Characters parsers strip, keep or refuse.
  ['http://exa\tmple.com/', /space, tab, newline or control character/],
  ['http://example.com/\nHost: evil', /space, tab, newline or control character/],
  [' http://example.com/', /space, tab, newline or control character/],
  ['http://example.com/a b', /space, tab, newline or control character/],
  ['http://example.com\x00.evil.com/', /space, tab, newline or control character/],
  ['http://example.com/\x7f', /space, tab, newline or control character/],
  // No scheme, or not the "//" form both read alike.
  ['example.com/api', /has no "scheme:\/\/"/],
  ['//example.com/api', /has no "scheme:\/\/"/],
  ['http:example.com/', /has no "scheme:\/\/"/],
  ['http:/example.com/', /has no "scheme:\/\/"/],
  ['http:\\\\example.com/', /has no "scheme:\/\/"/],
  ['http:///example.com/', /more than two slashes/],
  ['http:/\\/example.com/', /has no "scheme:\/\/"/],
  ['http://\\example.com/', /more than two slashes/],
  // Where the host ends.
  ['http://good.com\\@evil.com/', /"\\" in its host part/],
  ['http://good.com\\.evil.com/', /"\\" in its host part/],
  ['https://evil.com\\\\good.com/', /"\\" in its host part/],
  ['http://user@example.com/', /user name/],
  ['http://good.com:443@evil.com/', /user name/],
  ['http://user:pass@example.com/', /user name/],
  ['http://a@b@example.com/', /user name/],
  ['http://evil.com#@good.com/', /"@" after the "\?" or "#"/],
  ['http://evil.com?@good.com/', /"@" after the "\?" or "#"/],
  ['http://evil.com?x=/a@good.com', /"@" after the "\?" or "#"/],
  // The host itself.
  ['http://ex%61mple.com/', /percent-encodes its host/],
  ['http://127.0.0.1%2eevil.com/', /percent-encodes its host/],
  ['http://[fe80::1%25eth0]/', /percent-encodes its host/],
  ['http://exämple.com/', /not ASCII/],
  ['http://faß.de/', /not ASCII/],
  ['http://example。com/', /not ASCII/],
  ['http://ｅｘａｍｐｌｅ.com/', /not ASCII/],
  ['http://exa$mple.com/', /characters other than letters/],
  ['http://exa;mple.com/', /characters other than letters/],
  ['http://[::1x]/', /IPv6 literal/],
  ['http://example.com:8o/', /port that is not a number/],
  ['http://example.com:80:80/', /port that is not a number/],
  // Numeric hosts that are not dotted quads.
  ['http://2130706433/', /"2130706433" that is the IPv4 address 127\.0\.0\.1/],
  ['http://127.1/', /"127\.1" that is the IPv4 address 127\.0\.0\.1/],
  ['http://0x7f.1/', /the IPv4 address 127\.0\.0\.1/],
  ['http://0x7f000001/', /the IPv4 address 127\.0\.0\.1/],
  ['http://0177.0.0.1/', /the IPv4 address 127\.0\.0\.1/],
  ['http://010.0.0.1/', /the IPv4 address 8\.0\.0\.1/],
  ['http://127.0.0.1./', /the IPv4 address 127\.0\.0\.1/],
  ['http://127.0.0.256/', /an invalid IPv4 address/],
  ['http://evil.com.0x7f/', /IPv4/],
  ['127.1:443', /"127\.1" that is the IPv4 address/],
  ['0x7f.0.0.1:22', /IPv4/],
  ['user@host:22', /characters other than letters/],
  // Paths the client may send with what WHATWG URL resolved away.
  ['http://example.com/a\\..\\admin', /"\\" in its path/],
  ['http://example.com/a/../admin', /"\." or "\.\." path segment/],
  ['http://example.com/a/%2e%2E/admin', /"\." or "\.\." path segment/],
  ['http://example.com/./admin', /"\." or "\.\." path segment/],
  ['http://example.com/a/.%2e', /"\." or "\.\." path segment/],
];

describe('network targets two parsers read apart', () => {
  it.each(refused)('%j → refused', (target, why) => {
    const problem = networkTargetProblem(target);
    expect(problem).toMatch(why);
    expect(problem).toMatch(/^network target "/);
    expect(problem).not.toMatch(/\n/);
  });
});

const allowed = [
  'https://example.com',
  'https://example.com/',
  'https://docs.example.com/v1/search?q=a@b.com#top',
  'http://example.com:8080/a/b.c/..d/...',
  'http://example.com:/x',
  'HTTPS://Example.COM./x',
  'http://127.0.0.1:9/x',
  'http://10.0.0.255/',
  'http://[::1]:8080/',
  'http://[::ffff:127.0.0.1]/',
  'http://xn--exmple-cua.com/',
  'http://my_host.internal/',
  'http://example.com/%41%2F?x=%5C\\',
  'http://example.com/é?q=ü',
  'wss://example.com/socket',
  'example.com:443',
  '[::1]:22',
  'http://1.example.com/',
  'http://example.123x/',
];

describe('network targets every parser reads alike', () => {
  it.each(allowed)('%j → no problem', (target) => {
    expect(networkTargetProblem(target)).toBeNull();
  });
});
