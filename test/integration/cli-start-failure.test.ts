import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { tempConfig } from '../helpers/child-gateway.js';
import { spawnCli } from '../helpers/cli.js';
import { startSilentServer } from '../helpers/raw.js';
import { startRedis } from '../helpers/redis.js';
import { brokenCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A `trajgate start` that fails once it has opened parts (a listener's port taken, a CA that
 * cannot be used) closes them and exits non-zero, with the error on stderr, within a second of
 * printing it, whatever the store: the shared store's two Redis connections kept it running.
 */
const redis = await startRedis();
const taken = await startSilentServer();

const STORES = {
  memory: { store: 'memory' },
  redis: { store: 'redis', redis: { url: redis.url, timeout: '2s' } },
};

const FAILURES: [string, () => Record<string, unknown>, RegExp][] = [
  [
    'the admin port is in use',
    () => ({
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: `127.0.0.1:${taken.port}` },
    }),
    new RegExp(
      `^trajgate: EADDRINUSE: cannot listen on 127\\.0\\.0\\.1:${taken.port} \\(listen\\.admin\\)`,
      'm',
    ),
  ],
  [
    'tls.intercept names a CA folder with no CA',
    () => ({ tls: { intercept: ['example.org'], ca: join(tempDir(), 'certs') } }),
    /^ {2}\S+: tls\.ca: no CA in \S+: run `trajgate ca init --dir \S+`$/m,
  ],
  [
    'tls.intercept names a CA whose files cannot be parsed',
    () => ({ tls: { intercept: ['example.org'], ca: brokenCa() } }),
    /^trajgate: tls\.ca: \S+\/ca\.pem is not a PEM certificate \(.+\): run `trajgate ca init --dir \S+` for a new CA$/m,
  ],
];

/** How long after printing its error the process may take to exit. */
const EXIT_MS = 1_000;

describe('a start that fails exits', () => {
  for (const [store, state] of Object.entries(STORES)) {
    for (const [what, keys, error] of FAILURES) {
      it(`with the ${store} store when ${what}`, async () => {
        const { config } = tempConfig({ state, ...keys() });
        const spawned = performance.now();
        const cli = spawnCli(['start', '--config', config]);
        const exit = cli.exited.then((code) => ({ code, at: performance.now() }));
        await cli.waitFor(error, 30_000);
        const printed = performance.now();
        // Bounded here, not by the test's timeout: a process kept alive is killed and fails.
        const late = setTimeout(() => cli.child.kill('SIGKILL'), EXIT_MS * 5);
        const { code, at } = await exit;
        clearTimeout(late);
        const { stderr } = cli.output();
        expect(code, stderr).toBe(1);
        expect(stderr).not.toMatch(/listening on|review page on/);
        const after = `exited ${Math.round(at - printed)} ms after its error, ${Math.round(at - spawned)} ms after it was spawned`;
        expect(at - printed, after).toBeLessThan(EXIT_MS);
      });
    }
  }
});
