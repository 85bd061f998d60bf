import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import type { NetworkSubject } from '../../src/event/event.js';
import { matchesNetwork, parseNetworkPattern } from '../../src/event/network-pattern.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { urlPathReadings } from '../../src/event/path-readings.js';
import { compileApproval } from '../../src/guard/approvals.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { compileDeny, DenySet } from '../../src/guard/denies.js';
import { Guard } from '../../src/guard/guard.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A pattern naming a path is compared with every reading of the request's
 * path a server may make (event/path-readings.ts). A deny, a boundary and a sequence rule fire
 * on ANY reading; an allow holds only for the path as sent when EVERY reading stays under it.
 */
const H = 'http://h.test';
const event = (path: string, session = 's', method = 'GET') =>
  normalizeEvent(
    { kind: 'network', target: `${H}${path}`, method },
    { session, source: 'proxy', ts: 1000, workspace: '/tmp/agent-demo' },
  );

/** Spellings every one of which some server serves as `/admin/…`. */
const ADMIN_SPELLINGS = [
  '/admin/',
  '/admin',
  '/admin/x',
  '/ADMIN/',
  '/Admin/Users',
  '/%61dmin/',
  '/%61%64%6d%69%6e/',
  '/%41DMIN/x',
  '/admin;x/',
  '/admin;jsessionid=1/users',
  '/admin;',
  '/;x/admin/',
  '//admin/',
  '///admin',
  '/.//admin/',
  '/./admin/',
  '/x/../admin/',
  '/%2e/admin/',
  '/x/%2e%2e/admin/',
  '/admin%2f',
  '/admin%2Fusers',
  '/%2fadmin',
  '/admin%5cusers',
  '/%5cadmin%5c',
  '/\\admin\\',
  '/%2561dmin/',
  '/%252561dmin/',
  '/%25%36%31dmin/',
  '/admin./',
  '/admin%20/',
  '/admin.%20/x',
  '/admin%3bx/',
  '/admin%3fq',
  '/admin%23frag',
  '/%u0061dmin/',
  '/%EF%BD%81dmin/',
  '/ａｄｍｉｎ/',
  '/%61dmin;x//users',
];

/** Paths that share a prefix with `/admin` but no segment: not under `/admin/`. */
const OTHER_PATHS = [
  '/',
  '/administrator',
  '/adminx',
  '/admin-x/',
  '/ADMINX',
  '/%61dminx',
  '/x/admin/',
  '/public/admin',
  '/adm/in',
  '/admin/..',
];

describe('path readings', () => {
  it('reads a plain path only as itself', () => {
    expect(urlPathReadings('/v1/items')).toEqual([{ path: '/v1/items', how: '' }]);
  });

  it('says how each reading was made', () => {
    const hows = new Map(urlPathReadings('/%41dmin;x/').map((r) => [r.path, r.how]));
    expect(hows.get('/admin/')).toBe(
      'with unreserved characters decoded, with ";" parameters dropped, ignoring case',
    );
  });
});

describe('deny patterns read every spelling of the path', () => {
  const denies = new DenySet([compileDeny({ pattern: `${H}/admin/`, origin: 'config' })]);

  it.each(ADMIN_SPELLINGS)('refuses %s', (path) => {
    const m = denies.match(event(path));
    expect(m?.reason).toMatch(/^network\.deny: http:\/\/h\.test\/admin\//);
    expect(m?.reason).not.toMatch(/\n/);
  });

  it.each(OTHER_PATHS)('lets %s pass (segment boundary)', (path) => {
    expect(denies.match(event(path))).toBeUndefined();
  });

  it('says which deny refused and how it read the path', () => {
    expect(denies.match(event('/admin/x'))?.reason).toBe(`network.deny: ${H}/admin/`);
    expect(denies.match(event('/%61dmin;x/'))?.reason).toBe(
      `network.deny: ${H}/admin/ (the path "/%61dmin;x/" is "/admin/" when read with unreserved characters decoded, with ";" parameters dropped, as servers may)`,
    );
    const op = new DenySet([]);
    op.add(compileDeny({ pattern: `${H}/admin/`, id: 'd4' }));
    expect(op.match(event('/ADMIN/'))?.reason).toBe(
      `blocked by an operator (d4): ${H}/admin/ (the path "/ADMIN/" is "/admin/" when read ignoring case, as servers may)`,
    );
  });

  it('reads the pattern the same way: an encoded or capitalised prefix names the same path', () => {
    for (const pattern of [`${H}/%61dmin/`, `${H}/ADMIN`, `${H}/admin;v=1/`, `${H}//admin/`]) {
      const set = new DenySet([compileDeny({ pattern, origin: 'config' })]);
      expect(set.match(event('/admin/x')), pattern).toBeDefined();
      expect(set.match(event('/administrator')), pattern).toBeUndefined();
    }
  });

  it('keeps a method in the pattern exact and covers every port without one', () => {
    const set = new DenySet([compileDeny({ pattern: `DELETE h.test/admin/`, origin: 'config' })]);
    expect(set.match(event('/%61dmin/x', 's', 'DELETE'))).toBeDefined();
    expect(set.match(event('/%61dmin/x', 's', 'GET'))).toBeUndefined();
    const any = new DenySet([compileDeny({ pattern: 'h.test/admin', origin: 'config' })]);
    const ported = normalizeEvent(
      { kind: 'network', target: 'http://h.test:8080/ADMIN', method: 'GET' },
      { session: 's', source: 'proxy', ts: 1, workspace: '/tmp' },
    );
    expect(any.match(ported)).toBeDefined();
  });

  it('never sees a path with a hidden dot segment or a control character: refused earlier', () => {
    for (const path of [
      '/x/..%2fadmin/',
      '/x/..;/admin/',
      '/x/%252e%252e/admin',
      '/admin%2f%2e%2fx',
      '/admin%00/',
    ]) {
      expect(() => event(path), path).toThrow(/path/);
    }
  });
});

describe('allow patterns hold only for the plain spelling', () => {
  const allow = compileApproval({ pattern: `${H}/public/`, origin: 'config' });

  it.each([
    '/public/',
    '/public/x',
    '/public/a%2fb',
    '/public/%7Euser',
    '/public/a;b',
    '/public//x',
  ])('allows %s', (path) => expect(allow.test(event(path))).toBe(true));

  it.each([
    '/public',
    '/PUBLIC/',
    '/Public/x',
    '/%70ublic/',
    '/public;x/',
    '//public/',
    '/public%2fx',
    '/public%5cx',
    '/publicx',
    '/x/public/',
    '/ｐublic/',
  ])('does not allow %s', (path) => expect(allow.test(event(path))).toBe(false));

  it('keeps a prefix that starts with "//" a path, not a host', () => {
    const a = compileApproval({ pattern: 'h.test//admin/', origin: 'config' });
    expect(a.test(event('//admin/x'))).toBe(true);
    expect(a.test(event('/other'))).toBe(false);
  });

  it('does not allow a path one reading of which leaves the prefix', () => {
    // Such paths are refused when parsed (pathProblem); the matcher holds on its own too.
    const p = parseNetworkPattern(`${H}/public/`);
    const subject = (path: string): NetworkSubject => ({
      type: 'network',
      scheme: 'http',
      host: 'h.test',
      port: 80,
      path,
      method: 'GET',
    });
    expect(matchesNetwork(p, subject('/public/x'))).toBe(true);
    for (const path of ['/public/%2e%2e/admin', '/public/x%2f..%2f..%2fadmin', '/public/..;/a']) {
      expect(matchesNetwork(p, subject(path)), path).toBe(false);
    }
  });
});

describe('boundary and sequence targets fire on every reading', () => {
  const config = parseConfig(
    stringify({
      version: 1,
      workspace: '/tmp/agent-demo',
      policy: {
        boundaries: {
          admin: { kinds: ['network'], targets: [`${H}/admin/`], pauseAt: 1 },
        },
        sequences: [
          {
            name: 'export-after-keys',
            after: { kind: 'network', target: [`${H}/keys/`] },
            then: { kind: 'network', target: [`${H}/export/`] },
            verdict: 'PAUSE',
          },
        ],
      },
    }),
    'test',
    tempDir(),
  );

  it.each(ADMIN_SPELLINGS)('a boundary naming /admin/ is crossed by %s', (path) => {
    const d = new Guard(compilePolicy(config)).inspect(event(path));
    expect([d.verdict, d.boundary]).toEqual(['PAUSE', 'admin']);
  });

  it.each(OTHER_PATHS)('a boundary naming /admin/ is not crossed by %s', (path) => {
    expect(new Guard(compilePolicy(config)).inspect(event(path)).boundary).not.toBe('admin');
  });

  it.each([
    ['/keys/a', '/%65xport/x'],
    ['/KEYS', '/export;v=2/'],
    ['/%6beys;x/', '//EXPORT/'],
    ['/k%65ys%2fa', '/export%2f'],
  ])('a sequence naming paths marks on %s and fires on %s', (after, then) => {
    const guard = new Guard(compilePolicy(config));
    const first = guard.inspect(event(after));
    expect(first.marks).toEqual(['export-after-keys']);
    guard.commit('s', 1000, first, { seq: 1, kind: 'network', target: `${H}${after}` });
    const d = guard.inspect(event(then));
    expect([d.verdict, d.rule?.name]).toEqual(['PAUSE', 'export-after-keys']);
  });
});
