import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenerConflicts } from '../../src/config/listeners.js';
import { parseConfig } from '../../src/config/load.js';
import type { Problem } from '../../src/config/problems.js';
import { tempDir } from '../helpers/tmp.js';

/** The conflicts check-config finds among `listen` (the YAML's lines), as problems. */
function conflicts(listen: string): Problem[] {
  let found: Problem[] = [];
  parseConfig(
    `version: 1\nlisten:\n${listen}`,
    'x.yaml',
    tempDir(),
    {},
    {
      checks: (config, at) => {
        found = listenerConflicts(config, at);
        return [];
      },
    },
  );
  return found;
}

function listen(server: Server, port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    server.listen(port, host, () => resolve(null));
  });
}

/** Whether the OS refuses the second of two listeners on one port (really bound, loopback). */
async function refusedTogether(first: string, second: string): Promise<boolean> {
  const a = createServer();
  const b = createServer();
  try {
    expect(await listen(a, 0, first)).toBeNull();
    const port = (a.address() as { port: number }).port;
    return (await listen(b, port, second)) === 'EADDRINUSE';
  } finally {
    a.close();
    b.close();
  }
}

describe('listeners that share a port', () => {
  // Every prediction is checked against the OS: both really listen, or the second is refused.
  it.each([
    ['127.0.0.1', '127.0.0.1', true],
    ['0.0.0.0', '127.0.0.1', true],
    ['127.0.0.1', '0.0.0.0', true],
    ['::', '127.0.0.1', true],
    ['::', '::1', true],
    ['0.0.0.0', '::', true],
    ['::ffff:127.0.0.1', '127.0.0.1', true],
    ['127.0.0.1', '::ffff:127.0.0.1', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['127.0.0.1', '::1', false],
    ['0.0.0.0', '::1', false],
  ])('%s and %s: conflict %s, as the OS says', async (a, b, expected) => {
    expect(await refusedTogether(a, b)).toBe(expected);
    const at = (h: string) => (h.includes(':') ? `"[${h}]:18480"` : `${h}:18480`);
    const found = conflicts(`  proxy: ${at(a)}\n  bridge: ${at(b)}\n  admin: 127.0.0.1:0\n`);
    expect(found.length > 0).toBe(expected);
  });

  it('names both keys, both addresses and the line of each; placed at the later one', () => {
    const found = conflicts(
      '  proxy: 0.0.0.0:18480\n  bridge: 127.0.0.1:0\n  admin: 127.1:18480\n',
    );
    expect(found).toEqual([
      {
        path: ['listen', 'admin'],
        reads: [['listen', 'proxy']],
        text: 'listen.admin: 127.1:18480 overlaps listen.proxy (0.0.0.0:18480, x.yaml:3): both would listen on port 18480, and start would fail (EADDRINUSE); give each listener its own port',
      },
    ]);
  });

  it('a default on the same port is named as one, the problem placed at the key the file sets', () => {
    const [found] = conflicts('  admin: 127.0.0.1:8081\n');
    expect(found?.path).toEqual(['listen', 'admin']);
    expect(found?.text).toContain('overlaps listen.bridge (127.0.0.1:8081, its default)');
  });

  it('listen.socks, when set, is one of the listeners: its port is checked as theirs', () => {
    const [found] = conflicts('  socks: 127.0.0.1:8080\n');
    expect(found?.path).toEqual(['listen', 'socks']);
    expect(found?.text).toContain('listen.socks: 127.0.0.1:8080 overlaps listen.proxy');
    expect(conflicts('  socks: 127.0.0.1:1080\n')).toEqual([]);
  });

  it('port 0 never conflicts; names compare by name, and a wildcard takes any name', () => {
    expect(conflicts('  proxy: 0.0.0.0:0\n  bridge: 0.0.0.0:0\n  admin: "[::]:0"\n')).toEqual([]);
    expect(conflicts('  proxy: gw.local:9000\n  bridge: GW.local:9000\n')).toHaveLength(1);
    expect(conflicts('  proxy: gw.local:9000\n  bridge: 127.0.0.1:9000\n')).toEqual([]);
    expect(conflicts('  proxy: gw.local:9000\n  bridge: 0.0.0.0:9000\n')).toHaveLength(1);
    // localhost may be either loopback address: both are taken as bound.
    expect(conflicts('  proxy: localhost:9000\n  bridge: "[::1]:9000"\n')).toHaveLength(1);
  });
});
