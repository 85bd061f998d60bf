import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { TrajgateError } from '../../src/errors.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { applyRecord } from '../../src/journal/rebuild.js';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { suggestionFor } from '../../src/review/event-lookup.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * In the guard: ids and sources of config entries, per-agent and
 * role allowlists, a reload that swaps only what the config gave, revokes, deny patterns that
 * keep tunnels from opening blind, approvals fitted to refused events, and the journal replay
 * of approve, deny-pattern and revoke records.
 */
const dir = tempDir();
const configOf = (extra: Record<string, unknown>) =>
  parseConfig(stringify({ version: 1, workspace: '/tmp/agent-demo', ...extra }), 'test', dir);
const TOKEN = (id: string) => `${id}-token-0123456789abcdef`;
const FLEET = {
  agents: [
    { id: 'a1', token: TOKEN('a1'), allow: ['GET https://own.example/'], roles: ['ci'] },
    { id: 'a2', token: TOKEN('a2') },
  ],
  roles: { ci: { allow: ['registry.example'] } },
  network: { allow: ['docs.example'], deny: ['evil.example'] },
};
const event = (target: string, session = 'a1', method?: string, ts = 1000) =>
  normalizeEvent(
    { kind: 'network', target, ...(method ? { method } : {}) },
    { session, source: 'proxy', ts, workspace: '/tmp/agent-demo' },
  );

describe('compilePolicy', () => {
  it('gives config entries ids and sources, and each session its effective allowlist', () => {
    const policy = compilePolicy(configOf(FLEET));
    expect(policy.allow.map((a) => [a.id, a.pattern, a.source, a.session, a.origin])).toEqual([
      ['c1', 'docs.example', 'network.allow', null, 'config'],
      ['c2', 'GET https://own.example/', 'agents.a1.allow', 'a1', 'config'],
      ['c3', 'registry.example', 'roles.ci.allow', 'a1', 'config'],
    ]);
    expect(policy.deny.map((d) => [d.id, d.pattern, d.source])).toEqual([
      ['cd1', 'evil.example', 'network.deny'],
    ]);
    expect(policy.allowlistFor('a1')).toEqual([
      'docs.example',
      'GET https://own.example/',
      'registry.example',
    ]);
    expect(policy.allowlistFor('a2')).toEqual(['docs.example']);
  });

  it('refuses an agent naming a role that does not exist, naming the key and the roles', () => {
    const bad = { ...FLEET, agents: [FLEET.agents[0], { ...FLEET.agents[1], roles: ['x'] }] };
    let err: unknown;
    try {
      configOf(bad);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrajgateError);
    expect((err as TrajgateError).details.join('\n')).toContain(
      'agents[1].roles[0]: no role "x" (roles: ci)',
    );
  });
});

describe('Guard.replacePolicy (config reload)', () => {
  it("swaps the config's allowlists and denies; counts, pauses and operators' rules stay", () => {
    const guard = new Guard(compilePolicy(configOf(FLEET)));
    for (const target of ['https://x.example/', 'https://y.example/']) {
      const d = guard.inspect(event(target, 'a2'));
      guard.commit('a2', 1000, d);
    }
    expect(guard.session('a2')).toMatchObject({ pausedBy: 'network' });
    guard.approve({ pattern: 'op.example', session: 'a2', id: 'a7', by: 'alice' });
    guard.addDeny({ pattern: 'docs.example', session: 'a2', id: 'd8' });
    const next = configOf({ ...FLEET, network: { allow: ['new.example'], deny: [] } });
    guard.replacePolicy(compilePolicy(next));
    expect(guard.session('a2')?.counts.get('network')).toBe(2);
    expect(guard.session('a2')?.pausedAt).toBe(1000);
    expect(guard.inspect(event('https://new.example/', 'a2')).approved).toBe(true);
    expect(guard.inspect(event('https://evil.example/', 'a1')).deniedBy).toBeUndefined();
    expect(guard.inspect(event('https://op.example/', 'a2')).approvedBy).toBe('op.example');
    // the operator's deny pattern stays, the old allow entry is gone either way
    expect(guard.inspect(event('https://docs.example/', 'a2')).deniedBy).toContain('(d8)');
    expect(guard.approvals.all(0).map((a) => a.id)).toEqual(['c1', 'c2', 'c3', 'a7']);
  });
});

describe('Guard.revoke', () => {
  it("removes operators' approvals and denies by id; config entries and unknown ids stay", () => {
    const guard = new Guard(compilePolicy(configOf(FLEET)));
    guard.approve({ pattern: 'op.example', session: 'a1', id: 'a3' });
    expect(guard.revoke('c1')).toBeUndefined();
    expect(guard.revoke('cd1')).toBeUndefined();
    expect(guard.revoke('a99')).toBeUndefined();
    expect(guard.approvals.all(0)).toHaveLength(4);
    expect(guard.revoke('a3')?.pattern).toBe('op.example');
    expect(guard.inspect(event('https://op.example/')).approved).toBe(false);
  });
});

describe('deny patterns and blind tunnels', () => {
  it('a deny naming a method or path makes a blindly allowed tunnel be read', () => {
    const policy = { network: { allow: ['api.example'], deny: ['POST http://api.example/x/'] } };
    const guard = new Guard(compilePolicy(configOf(policy)));
    expect(guard.inspect(event('api.example:80')).verdict).toBe('ALLOW');
    expect(guard.mustRead(event('api.example:80'))).toBe(true);
    expect(guard.mustRead(event('other.example:443'))).toBe(false);
    const plain = new Guard(compilePolicy(configOf({ network: { allow: ['api.example'] } })));
    expect(plain.mustRead(event('api.example:80'))).toBe(false);
  });
});

describe('approvals fitted to a refused event', () => {
  const record = (kind: string, target: string, method?: string) =>
    ({ kind, target, session: 'a1', ...(method ? { method } : {}) }) as EventRecord;
  it.each([
    [record('network', 'http://h:8080/v1/x', 'POST'), 'POST http://h:8080/v1/', 'network'],
    [record('network', 'https://h/v1/x/y?q=1', 'GET'), 'GET https://h/v1/x/', 'network'],
    [record('network', 'https://h/', 'DELETE'), 'DELETE https://h', 'network'],
    [record('network', 'h.example:443'), 'h.example:443', 'network'],
    [record('write', 'out/*.txt'), '/tmp/agent-demo/out/\\*.txt', 'write'],
    [record('write', '/etc/passwd'), '/etc/passwd', 'write'],
  ])('%o → %s', (r, pattern, kind) => {
    expect(suggestionFor(r, '/tmp/agent-demo')).toEqual({ pattern, kind });
  });

  it('the POST suggestion approves that POST and not a GET on the same path', () => {
    const guard = new Guard(compilePolicy(configOf({})));
    const { pattern } = suggestionFor(record('network', 'http://h:8080/v1/x', 'POST'), '/');
    guard.approve({ pattern, session: 'a1' });
    expect(guard.inspect(event('http://h:8080/v1/other', 'a1', 'POST')).approved).toBe(true);
    expect(guard.inspect(event('http://h:8080/v1/x', 'a1', 'GET')).approved).toBe(false);
    expect(guard.inspect(event('http://h:8080/v2/x', 'a1', 'POST')).approved).toBe(false);
  });
});

describe('replaying operator records', () => {
  it('approve, deny-pattern and revoke come back with their ids', () => {
    const guard = new Guard(compilePolicy(configOf({})));
    const base = { ts: new Date(1000).toISOString(), by: 'alice' };
    const records = [
      {
        ...base,
        seq: 4,
        type: 'approve',
        session: 'a1',
        pattern: 'x.example',
        kind: 'network',
        expiresAt: null,
      },
      {
        ...base,
        seq: 5,
        type: 'approve',
        session: null,
        pattern: 'y.example',
        kind: 'network',
        expiresAt: null,
      },
      { ...base, seq: 6, type: 'deny-pattern', session: 'a1', pattern: 'y.example' },
      {
        ...base,
        seq: 7,
        type: 'revoke',
        id: 'a4',
        pattern: 'x.example',
        kind: 'network',
        session: 'a1',
      },
    ] as JournalRecord[];
    for (const r of records) applyRecord(guard, r);
    expect(guard.approvals.all(0).map((a) => [a.id, a.by])).toEqual([['a5', 'alice']]);
    expect(guard.denies.all('a1').map((d) => d.id)).toEqual(['d6']);
    expect(guard.inspect(event('https://y.example/', 'a1')).deniedBy).toBe(
      'blocked by an operator (d6): y.example',
    );
    expect(guard.inspect(event('https://y.example/', 'a2')).approvedBy).toBe('y.example');
  });
});
