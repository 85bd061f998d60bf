import { describe, expect, it } from 'vitest';
import { parseNetworkTarget, pathProblem } from '../../src/event/network-target.js';
import { matchesNetwork, parseNetworkPattern } from '../../src/event/network-pattern.js';

/**
 * Request targets an upstream could read as another resource than trajgate judges: each
 * spelling → the path trajgate judges (and forwards), or refused with why. The allowlist entry
 * they try to stretch is `GET http://api.example.test/v1/`.
 */
const V1 = parseNetworkPattern('GET http://api.example.test/v1/');
const A = 'http://api.example.test';

// [spelling, judged path | null (refused), matches the /v1/ prefix]
const readings: [string, string | null, boolean][] = [
  // Resolved by the URL parser before matching, and forwarded resolved: one reading.
  ['/v1/../admin', '/admin', false],
  ['/v1/%2e%2e/admin', '/admin', false],
  ['/v1/%2E./admin', '/admin', false],
  ['/v1/.%2e/admin', '/admin', false],
  ['/v1\\..\\admin', '/admin', false],
  ['/v1//../admin', '/v1/admin', true],
  ['/v1/;/../admin', '/v1/admin', true],
  ['/v1/x%3f/../../admin', '/admin', false],
  ['/v1/x?/../../admin', '/v1/x', true],
  ['/v1/x#/../../admin', '/v1/x', true],
  // Left alone by the URL parser, resolved by some upstream: refused.
  ['/v1/..%2fadmin', null, false], // nginx, Express/Go routers that decode first
  ['/v1/..%2Fadmin', null, false],
  ['/v1/%2e%2e%2fadmin', null, false],
  ['/v1/..%5cadmin', null, false], // IIS, Windows paths
  ['/v1/..;/admin', null, false], // Tomcat / Spring path parameters
  ['/v1/..;jsessionid=1/admin', null, false],
  ['/v1/.;/admin', null, false],
  ['/v1/..%3b/admin', null, false],
  ['/v1/%252e%252e/admin', null, false], // decoded twice
  ['/v1/%25252e%25252e/admin', null, false],
  ['/v1/%2525252e/admin', null, false], // deeper than three decodings
  ['/v1/%c0%ae%c0%ae/admin', null, false], // overlong UTF-8 "."
  ['/v1/%e0%80%ae/admin', null, false],
  ['/v1/．．/admin', null, false], // fullwidth dots, NFKC → ".."
  ['/v1/..%ef%bc%8fadmin', null, false], // fullwidth solidus
  ['/v1/..%20/admin', null, false], // Windows drops trailing spaces
  ['/v1/...', null, false],
  ['/v1/x%00.json', null, false], // NUL truncation
  ['/v1/x%0d%0aGET%20/admin', null, false], // CR LF: splitting at the next hop
  ['/v1/..%3f/admin', null, false],
  // One reading only: allowed as they are.
  ['/v1/@types%2fnode', '/v1/@types%2fnode', true], // npm scoped package: no dot segment
  ['/v1/a%2Fb%5Cc', '/v1/a%2Fb%5Cc', true],
  ['/v1/100%25', '/v1/100%25', true],
  ['/v1/x%252Fy', '/v1/x%252Fy', true],
  ['/v1/x;v=1', '/v1/x;v=1', true],
  ['/v1/file.tar.gz', '/v1/file.tar.gz', true],
  ['/v1/..a/.b/c..', '/v1/..a/.b/c..', true],
  ['/v1/caf%C3%A9', '/v1/caf%C3%A9', true],
  ['/v1/x%e9', '/v1/x%e9', true], // latin1: not UTF-8, but no dot in any reading
  ['/v1', '/v1', false],
  ['/v10/x', '/v10/x', false],
  ['/v1;/x', '/v1;/x', false], // Tomcat reads /v1/x: refused is the safe side
  ['/%761/x', '/%761/x', false],
];

describe('request paths: judged reading or refused', () => {
  it.each(readings)('%s → %s', (spelling, judged, allowed) => {
    const target = A + spelling;
    if (judged === null) {
      expect(() => parseNetworkTarget(target, 'GET')).toThrow(/^path "/);
      return;
    }
    const subject = parseNetworkTarget(target, 'GET');
    expect(subject.path).toBe(judged);
    expect(pathProblem(judged)).toBeNull();
    expect(matchesNetwork(V1, subject)).toBe(allowed);
  });

  it('the refusal names the path and says what to send instead, on one line', () => {
    expect(() => parseNetworkTarget(`${A}/v1/..%2fadmin`)).toThrow(
      /^path "\/v1\/..%2fadmin" hides a dot segment .* send the path with plain "\/"/,
    );
    expect(pathProblem(`/v1/${'%2e'.repeat(500)}%2f`)).toMatch(/…" hides a dot segment/);
    expect(pathProblem('/v1/x%00')).not.toContain('\n');
  });

  it('a method is compared as sent: Node refuses a lower-case one before it gets here', () => {
    expect(matchesNetwork(V1, parseNetworkTarget(`${A}/v1/x`, 'GET'))).toBe(true);
    expect(matchesNetwork(V1, parseNetworkTarget(`${A}/v1/x`, 'HEAD'))).toBe(false);
    expect(matchesNetwork(V1, parseNetworkTarget(`${A}/v1/x`, 'POST'))).toBe(false);
  });
});

describe('a path prefix ends on a segment and never covers a query', () => {
  it.each([
    ['POST https://x.test/upload', '/upload', true],
    ['POST https://x.test/upload', '/upload/part', true],
    ['POST https://x.test/upload', '/uploads', false],
    ['POST https://x.test/upload', '/upload-admin', false],
    ['POST https://x.test/upload', '/upload;x', false],
    ['POST https://x.test/upload/', '/upload', false],
    ['POST https://x.test/upload/', '/upload/x', true],
  ])('%s ~ %s → %s', (pattern, path, expected) => {
    const subject = parseNetworkTarget(`https://x.test${path}`, 'POST');
    expect(matchesNetwork(parseNetworkPattern(pattern), subject)).toBe(expected);
  });

  it.each([
    ['GET https://x.test/search?q=safe', 'query or fragment'],
    ['GET https://x.test/v1/#top', 'query or fragment'],
    ['GET https://x.test/v1/..', '"." or ".." segments'],
    ['GET https://x.test/v1/%2e%2e/admin', '"." or ".." segments'],
    ['GET https://x.test/v1/./x', '"." or ".." segments'],
    ['GET https://x.test/v1/..%2f', 'hides a dot segment'],
    ['GET https://x.test/v1/..;/', 'hides a dot segment'],
  ])('rejects the pattern %j (%s)', (pattern, why) => {
    expect(() => parseNetworkPattern(pattern)).toThrow(why);
  });
});
