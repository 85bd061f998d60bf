import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandEnv } from '../../src/config/env.js';
import { defaultConfig, parseConfig } from '../../src/config/load.js';
import { missingWorkspaces } from '../../src/cli/start-checks.js';
import { TrajgateError } from '../../src/errors.js';
import { tempDir } from '../helpers/tmp.js';

/** `${VAR:-default}`, TRAJGATE_DATA, and workspaces that do not exist. */
describe('${VAR:-default}', () => {
  const expand = (text: string, env: NodeJS.ProcessEnv) => {
    const missing: string[] = [];
    const value = expandEnv({ k: text }, env, (_path, name) => {
      missing.push(name);
    });
    return { value: (value as { k: string }).k, missing };
  };

  it.each([
    ['${PORT:-8080}', {}, '8080'],
    ['${PORT:-8080}', { PORT: '' }, '8080'],
    ['${PORT:-8080}', { PORT: '9090' }, '9090'],
    ['http://${HOST:-127.0.0.1}:${PORT:-0}/x', { PORT: '1' }, 'http://127.0.0.1:1/x'],
    ['${EMPTY:-}', {}, ''],
    ['${A:-with spaces, and: colons}', {}, 'with spaces, and: colons'],
  ])('%s with %j → %s', (text, env, expected) => {
    expect(expand(text, env)).toEqual({ value: expected, missing: [] });
  });

  it('${VAR} without a default is still an error naming the key and the variable', () => {
    expect(expand('${NOPE}', {}).missing).toEqual(['NOPE']);
    try {
      parseConfig('version: 1\nadmin:\n  token: "${NOPE}"\n', 'x.yaml', '/srv');
      expect.unreachable();
    } catch (err) {
      expect((err as TrajgateError).details).toEqual([
        'x.yaml:3:3: admin.token: environment variable NOPE is not set',
      ]);
    }
  });

  it('fills a config key', () => {
    const text = 'version: 1\nlisten: { proxy: "127.0.0.1:${PROXY_PORT:-8080}" }\n';
    expect(parseConfig(text, 'x.yaml', '/srv', {}).listen.proxy.port).toBe(8080);
    expect(parseConfig(text, 'x.yaml', '/srv', { PROXY_PORT: '3128' }).listen.proxy.port).toBe(
      3128,
    );
  });
});

describe('TRAJGATE_DATA', () => {
  it('a relative journal resolves against it; an absolute one is kept', () => {
    const env = { TRAJGATE_DATA: '/var/lib/trajgate' };
    const text = 'version: 1\njournal: ./data/j.jsonl\ntls: { ca: ./certs }\n';
    const rel = parseConfig(text, 'x', '/etc/trajgate', env);
    expect(rel.journal.path).toBe('/var/lib/trajgate/data/j.jsonl');
    expect(rel.tls.ca).toBe('/etc/trajgate/certs');
    const abs = parseConfig('version: 1\njournal: /srv/j.jsonl\n', 'x', '/etc/trajgate', env);
    expect(abs.journal.path).toBe('/srv/j.jsonl');
  });

  it.each([
    [{ TRAJGATE_DATA: '/var/lib/trajgate' }, '/var/lib/trajgate'],
    [{ TRAJGATE_DATA: 'rel', XDG_STATE_HOME: '/xdg' }, '/srv/x/rel'],
    [{ XDG_STATE_HOME: '/xdg', HOME: '/home/u' }, '/xdg/trajgate'],
    [{ XDG_STATE_HOME: 'relative', HOME: '/home/u' }, '/home/u/.local/state/trajgate'],
    [{ HOME: '/home/u' }, '/home/u/.local/state/trajgate'],
  ])('with %j, data not given goes to %s, never the current folder', (env, home) => {
    const embedded = defaultConfig('/srv/x', env);
    expect(embedded.journal.path).toBe(`${home}/journal.jsonl`);
    expect(embedded.tls.ca).toBe(`${home}/certs`);
    const file = parseConfig('version: 1\n', 'x', '/srv/x', env);
    expect([file.journal.path, file.tls.ca]).toEqual([`${home}/journal.jsonl`, `${home}/certs`]);
  });
});

describe('workspaces that do not exist', () => {
  it('are named with their key and path; existing ones pass', () => {
    const root = tempDir();
    mkdirSync(join(root, 'ws'));
    writeFileSync(join(root, 'file'), '');
    const text = [
      'version: 1',
      'workspace: ./nowhere',
      'agents:',
      '  - { id: a1, token: aaaaaaaaaaaaaaaa }',
      '  - { id: a2, token: bbbbbbbbbbbbbbbb, workspace: ./ws }',
      '  - { id: a3, token: cccccccccccccccc, workspace: ./file }',
    ].join('\n');
    expect(missingWorkspaces(parseConfig(text, 'x', root)).map((p) => p.text)).toEqual([
      `workspace: ${root}/nowhere does not exist (create it, or change workspace)`,
      `agents[2].workspace: ${root}/file is not a folder (change agents[2].workspace)`,
    ]);
    const fine = parseConfig('version: 1\nworkspace: ./ws\n', 'x', root);
    expect(missingWorkspaces(fine)).toEqual([]);
  });
});
