import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfig, loadConfigFile, parseConfig } from '../../src/config/load.js';
import { missingWorkspaces } from '../../src/cli/start-checks.js';
import { TrajgateError } from '../../src/errors.js';

const fixtures = join(import.meta.dirname, '../fixtures/config');
const broken = readdirSync(join(fixtures, 'broken')).filter((f) => f.endsWith('.yaml'));

function loadError(file: string): TrajgateError {
  try {
    loadConfigFile(file, { TRAJGATE_TEST_TOKEN: 'x'.repeat(32) });
  } catch (err) {
    if (err instanceof TrajgateError) return err;
    throw err;
  }
  throw new Error(`${file} loaded without error`);
}

describe('broken configs are each explained', () => {
  it.each(broken)('%s', (name) => {
    const file = join(fixtures, 'broken', name);
    const text = readFileSync(file, 'utf8');
    const expected = [...text.matchAll(/^# expect: (.*)$/gm)].map((m) => m[1] as string);
    const err = loadError(file);
    expect(err.code).toMatch(/^E_CONFIG_(YAML|INVALID)$/);
    const all = [err.message, ...err.details].join('\n');
    for (const e of expected) expect(all).toContain(e);
    const count = /^# expect-count: (\d+)$/m.exec(text);
    if (count) expect(err.details).toHaveLength(Number(count[1]));
  });
});

describe('valid configs', () => {
  it('resolves paths against the config file and expands the environment', () => {
    const file = join(fixtures, 'valid', 'agents.yaml');
    const config = loadConfigFile(file, { TRAJGATE_TEST_TOKEN: 'secret-token-from-env-0123' });
    expect(config.agents?.[0]).toMatchObject({
      id: 'agent-1',
      token: 'secret-token-from-env-0123',
    });
    expect(config.agents?.[0]?.workspace).toBe(join(fixtures, 'valid', 'agent-1'));
    expect(config.agents?.[1]?.workspace).toBe(join(fixtures, 'valid', 'ws'));
    expect(config.journal.path).toBe(join(fixtures, 'valid', 'data/journal.jsonl'));
    expect(config.policy.holdTimeout).toBe(2000);
    expect(Object.keys(config.policy.boundaries)).toEqual([
      'workspace',
      'network',
      'deploy',
      'tool',
    ]);
    expect(config.policy.boundaries.network).toMatchObject({ reviewAt: 1, pauseAt: 2 });
    expect([...config.kinds]).toContain('deploy');
  });

  it('the example config is valid with no environment variables set', () => {
    const file = join(import.meta.dirname, '../../config/trajgate.example.yaml');
    const config = loadConfigFile(file, {});
    expect(config.agents).toBeNull();
    expect(missingWorkspaces(config)).toEqual([]);
  });

  it('the embedded default is the one documented', () => {
    const config = defaultConfig('/srv/x', { HOME: '/home/u' });
    expect(config.workspace).toBe('/srv/x');
    // Never in the workspace (docs/rules.md § Where the data lives): the XDG state folder.
    expect(config.journal.path).toBe('/home/u/.local/state/trajgate/journal.jsonl');
    expect(config.tls.ca).toBe('/home/u/.local/state/trajgate/certs');
    expect(config.listen.proxy).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(config.listen.bridge).toEqual({ host: '127.0.0.1', port: 8081 });
    expect(config.listen.admin).toEqual({ host: '127.0.0.1', port: 8082 });
    // The SOCKS5 listener is off unless listen.socks is set.
    expect(config.listen.socks).toBeUndefined();
    expect(config.network.allow).toEqual([]);
    expect(config.policy).toMatchObject({
      countBy: 'boundary',
      review: 'block',
      pause: 'hold',
      holdTimeout: 55_000,
      recentEvents: 20,
    });
    expect(config.agents).toBeNull();
  });

  // docs/proxy.md and docs/tls.md § Capture name these defaults.
  it('a file that leaves them out gets the defaults the docs name', () => {
    const config = parseConfig('version: 1\npolicy: { countBy: target }\n', 'test', '/srv/x');
    expect(config.policy).toMatchObject({ review: 'block', pause: 'hold', holdTimeout: 55_000 });
    expect(config.network.ports).toEqual([80, 443]);
    expect(config.network.upgrades).toEqual(['websocket']);
    expect(config.limits.bodyTimeout).toBe(30_000);
    expect(config.capture).toEqual({ bodies: false, maxBytes: 65_536, redact: true });
  });
});
