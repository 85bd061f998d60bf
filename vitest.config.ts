import { defineConfig } from 'vitest/config';

/**
 * The suites that hold the proxy's security and bad-input rules (listener, tunnels, TLS,
 * upstreams). They run once more on `engine: node`, the reference the default engine is held
 * equal to (engine-differential.test.ts), while it stays selectable.
 */
const reference = [
  'test/integration/proxy-*.test.ts',
  'test/integration/tls-*.test.ts',
  'test/integration/exfil-tunnel.test.ts',
  'test/integration/tunnel-keep-alive.test.ts',
  'test/integration/upstream-connect.test.ts',
  'test/integration/config-reload-upstreams.test.ts',
  'test/integration/socks-bad-input.test.ts',
];

export default defineConfig({
  test: {
    // Rebuilds dist/ first when src/ is newer: tests run the built CLI and gateway.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 90_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'default', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: { name: 'node-engine', include: reference, env: { TRAJGATE_TEST_ENGINE: 'node' } },
      },
    ],
  },
});
