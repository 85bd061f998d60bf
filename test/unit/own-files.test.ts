import { linkSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import type { ProtectedFiles } from '../../src/config/own-files.js';
import { dataInWorkspaces, OwnFiles } from '../../src/config/own-files.js';
import type { Event, Subject } from '../../src/event/event.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { compilePolicy } from '../../src/guard/compile.js';
import { Guard } from '../../src/guard/guard.js';
import { protectedReach } from '../../src/guard/protected.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * trajgate's files are never the agent's. The matching is pure (a table over
 * plain data); the identities come from the disk (OwnFiles), and the guard pauses on a match
 * before anything can approve it.
 */
const OWN: ProtectedFiles = {
  folders: [{ path: '/d/data', what: "the journal's folder" }],
  files: [
    { path: '/etc/t/trajgate.yaml', what: 'the config file' },
    { path: '/d/certs/ca-key.pem', what: 'the CA key' },
  ],
  inodes: new Map([['7:42', '/d/data/journal.jsonl']]),
};

const pathEvent = (
  kind: string,
  path: string | null,
  extra: { alias?: string; inodes?: readonly string[]; tree?: true } = {},
): Event => ({
  kind,
  target: path ?? 'x',
  approved: false,
  session: 's',
  source: 'bridge',
  ts: 0,
  subject: { type: 'path', path, alias: extra.alias ?? null, ...extra } as Subject,
});

describe('protectedReach', () => {
  it.each([
    ['read', '/d/data/admin-token', {}, /is inside the journal's folder \/d\/data/],
    ['read', '/d/data/captures/7.json', {}, /inside the journal's folder/],
    ['read', '/d/data', {}, /^\/d\/data is the journal's folder$/],
    ['write', '/d/data/journal.jsonl', {}, /inside/],
    ['command', '/d/data', {}, /is the journal's folder/],
    ['write', '/d', {}, /^\/d holds the journal's folder \/d\/data \(moving or removing it/],
    ['write', '/', {}, /^\/ holds/],
    ['read', '/d', { tree: true }, /^\/d holds .*\(reading its tree returns it along\)/],
    ['read', '/etc/t/trajgate.yaml', {}, /is the config file/],
    ['write', '/etc/t', {}, /holds the config file \/etc\/t\/trajgate.yaml/],
    ['read', '/etc', { tree: true }, /holds the config file/],
    ['write', '/d/certs/ca-key.pem', {}, /is the CA key/],
    // The lexical `..` reading counts as much as the real one.
    ['read', '/ws/x', { alias: '/d/data/admin-token' }, /\/d\/data\/admin-token is inside/],
    ['read', '/ws/j', { inodes: ['7:42'] }, /^\/ws\/j is a hard link to \/d\/data\/journal.jsonl$/],
    ['write', '/ws/j', { inodes: ['1:1', '7:42'] }, /hard link/],
  ] as const)('%s %s %j → %s', (kind, path, extra, reach) => {
    expect(protectedReach(OWN, pathEvent(kind, path, extra))).toMatch(reach);
  });

  it.each([
    ['read', '/d', {}], // its names only: not a tree, not a write
    ['command', '/d', {}], // what a command runs is not visible
    ['read', '/etc/t', {}],
    ['read', '/d/database', {}], // a prefix, not a folder of it
    ['write', '/d/data-old/x', {}],
    ['write', '/d/certs/ca.pem.bak', {}],
    ['read', '/ws/j', { inodes: ['7:43'] }],
    ['read', null, {}], // unresolvable: judged by the workspace boundary as outside
    ['deploy', '/d/data', {}], // not a path kind
  ] as const)('%s %s %j → null', (kind, path, extra) => {
    expect(protectedReach(OWN, pathEvent(kind, path, extra))).toBeNull();
  });

  it('a network event never reaches them', () => {
    const event = normalizeEvent(
      { kind: 'network', target: 'http://d/data/admin-token' },
      { session: 's', source: 'proxy', ts: 0, workspace: '/ws' },
    );
    expect(protectedReach(OWN, event)).toBeNull();
  });
});

/** A data folder and a workspace beside it, with the config file in a third folder. */
function stage(extra: Record<string, unknown> = {}) {
  const root = tempDir();
  const ws = join(root, 'ws');
  const data = join(root, 'data');
  mkdirSync(ws);
  mkdirSync(join(root, 'etc'));
  mkdirSync(join(data, 'captures'), { recursive: true });
  writeFileSync(join(data, 'journal.jsonl'), '');
  writeFileSync(join(data, 'admin-token'), 'secret-admin-token\n');
  const file = join(root, 'etc', 'trajgate.yaml');
  const text = stringify({
    version: 1,
    workspace: ws,
    journal: join(data, 'journal.jsonl'),
    tls: { ca: join(root, 'certs') },
    ...extra,
  });
  writeFileSync(file, text);
  return { root, ws, data, file, config: parseConfig(text, file, join(root, 'etc')) };
}

const judge = (guard: Guard, kind: string, target: string) =>
  guard.inspect(
    normalizeEvent(
      { kind, target },
      { session: 'a', source: 'bridge', ts: 1000, workspace: guard.policy.workspaceFor('a') },
      undefined,
    ),
  );

describe('the guard on trajgate-files', () => {
  it('pauses at once, counted, whatever approves it: a pattern, approve-once, a rule', () => {
    const { root, ws, data, config } = stage();
    const token = join(data, 'admin-token');
    const guard = new Guard(compilePolicy(config));
    guard.approve({ pattern: `${root}/**`, kind: 'read', session: null, origin: 'operator' });
    // The approval covers reads there (control)…
    expect(judge(guard, 'read', join(root, 'etc', 'trajgate.yml')).approved).toBe(true);
    // …but not trajgate's own.
    const d = judge(guard, 'read', token);
    expect(d).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'trajgate-files',
      count: 1,
      approved: false,
      counted: { 'trajgate-files': 1 },
    });
    expect(d.reason).toBe(
      `read of trajgate's own files (${token} is inside the journal's folder ${data}): they are never the agent's, and no approval covers them`,
    );
    // Approved once by an operator: still refused.
    const context = {
      session: 'a',
      source: 'bridge' as const,
      ts: 1000,
      workspace: ws,
      approved: true,
    };
    const once = guard.inspect(normalizeEvent({ kind: 'read', target: token }, context));
    expect([once.verdict, once.boundary]).toEqual(['PAUSE', 'trajgate-files']);
    // The same read relative to the workspace, through `..`.
    expect(judge(guard, 'read', '../data/admin-token').boundary).toBe('trajgate-files');
    expect(judge(guard, 'read', join(ws, 'notes.txt')).verdict).toBe('ALLOW');
  });

  it('a trajectory rule as severe does not rename it', () => {
    const { data, config } = stage({
      policy: {
        sequences: [
          { name: 'any-read', after: { kind: 'read' }, then: { kind: 'read' }, verdict: 'PAUSE' },
        ],
      },
    });
    const guard = new Guard(compilePolicy(config));
    const first = judge(guard, 'read', '/etc/hostname');
    guard.commit('a', 1000, first, { seq: 1, kind: 'read', target: '/etc/hostname' });
    const d = judge(guard, 'read', join(data, 'journal.jsonl'));
    expect([d.verdict, d.boundary, d.rule, d.eventNo]).toEqual([
      'PAUSE',
      'trajgate-files',
      undefined,
      2,
    ]);
  });

  it('a symlink in the workspace to the data folder, and a hard link to the journal, are the files', () => {
    const { ws, data, config } = stage();
    symlinkSync(data, join(ws, 'data-link'));
    linkSync(join(data, 'admin-token'), join(ws, 'token-copy'));
    const guard = new Guard(compilePolicy(config));
    expect(judge(guard, 'read', 'data-link/admin-token').boundary).toBe('trajgate-files');
    const d = judge(guard, 'read', 'token-copy');
    expect(d.reason).toContain(
      `${join(ws, 'token-copy')} is a hard link to ${join(data, 'admin-token')}`,
    );
  });
});

describe('OwnFiles', () => {
  it('holds the data folder, the CA files and the config file by real path', () => {
    const { root, data, file, config } = stage();
    const own = new OwnFiles(config);
    expect(own.folders).toEqual([{ path: data, what: "the journal's folder" }]);
    expect(own.files.map((f) => f.path)).toEqual([
      join(root, 'certs', 'ca.pem'),
      join(root, 'certs', 'ca-key.pem'),
      file,
    ]);
    expect([...own.inodes.values()].sort()).toEqual(
      [join(data, 'admin-token'), join(data, 'journal.jsonl'), file].sort(),
    );
  });

  it('refresh finds a journal file a rotation made, and a capture written since', () => {
    const { data, config } = stage();
    const own = new OwnFiles(config);
    const before = own.inodes;
    own.refresh();
    expect(own.inodes).toBe(before); // nothing changed: not walked again
    renameSync(join(data, 'journal.jsonl'), join(data, 'journal.000001.jsonl'));
    writeFileSync(join(data, 'journal.jsonl'), '');
    writeFileSync(join(data, 'captures', '9.json'), '{}');
    own.refresh();
    expect([...own.inodes.values()]).toEqual(
      expect.arrayContaining([
        join(data, 'journal.jsonl'),
        join(data, 'journal.000001.jsonl'),
        join(data, 'captures', '9.json'),
      ]),
    );
  });
});

describe('dataInWorkspaces', () => {
  const agent = (workspace: string) => ({ id: 'a1', token: 'a'.repeat(16), workspace });

  it.each([
    [
      'the journal in the workspace',
      (r: string) => ({ journal: join(r, 'ws', 'data', 'journal.jsonl') }),
      (r: string) => [
        `journal.path: the journal's folder ${r}/ws/data is inside the workspace ${r}/ws (workspace), where the agent could read or rewrite it: move one of them`,
      ],
    ],
    [
      'the CA in an agent workspace',
      (r: string) => ({
        agents: [agent(join(r, 'ca-ws'))],
        tls: { ca: join(r, 'ca-ws', 'certs') },
      }),
      (r: string) =>
        ['CA certificate', 'CA key'].map((what, i) =>
          expect.stringMatching(
            `^tls\\.ca: the ${what} ${r}/ca-ws/certs/${['ca.pem', 'ca-key.pem'][i]} is inside the workspace ${r}/ca-ws \\(agents\\[0\\]\\.workspace\\)`,
          ),
        ),
    ],
    [
      'an agent workspace inside the data folder',
      (r: string) => ({ agents: [agent(join(r, 'data', 'ws'))] }),
      (r: string) => [
        `agents[0].workspace: the workspace ${r}/data/ws is inside the journal's folder ${r}/data (journal.path), which is never the agent's: move one of them`,
      ],
    ],
    [
      'the data folder as the workspace',
      (r: string) => ({ workspace: join(r, 'data') }),
      (r: string) => [
        expect.stringMatching(
          `^journal\\.path: the journal's folder ${r}/data is inside the workspace ${r}/data `,
        ),
      ],
    ],
  ])('%s', (_, keys, expected) => {
    const root = tempDir();
    for (const d of ['ws', 'ca-ws', 'data/ws']) mkdirSync(join(root, d), { recursive: true });
    const text = stringify({
      version: 1,
      workspace: join(root, 'ws'),
      journal: join(root, 'data', 'journal.jsonl'),
      tls: { ca: join(root, 'certs') },
      ...keys(root),
    });
    const problems = dataInWorkspaces(parseConfig(text, 'x', root));
    expect(problems.map((p) => p.text)).toEqual(expected(root));
  });

  it('finds nothing when they are apart', () => {
    expect(dataInWorkspaces(stage().config)).toEqual([]);
  });
});
