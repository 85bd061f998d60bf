import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestGateway } from '../helpers/gateway.js';
import { startSilentServer } from '../helpers/raw.js';
import { startRedis } from '../helpers/redis.js';
import { brokenCa } from '../helpers/tls.js';

/**
 * startGateway opens its parts in order and, when one fails, closes those it opened, last
 * first: a listener whose port is taken leaves the listeners before it closed (their ports free
 * again) and the shared store's connections closed, and the error names the key.
 */
const redis = await startRedis();
const taken = await startSilentServer();
const LISTENERS = ['proxy', 'bridge', 'admin'] as const;

/** Listens on `port` (0: any) and closes again; resolves with the port, or null when taken. */
function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const got = (server.address() as AddressInfo).port;
      server.close(() => resolve(got));
    });
  });
}

/** Connections Redis accepted since it started (INFO stats). */
async function connectionsReceived(): Promise<number> {
  const info = await redis.client().info('stats');
  return Number(/total_connections_received:(\d+)/.exec(info)?.[1]);
}

/** The names of the clients connected to Redis now. */
async function clientNames(): Promise<string[]> {
  const list = String(await redis.client().client('LIST'));
  return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1] as string);
}

describe('a listener whose port is taken', () => {
  for (const [i, name] of LISTENERS.entries()) {
    it(`listen.${name}: E_LISTEN naming it; what opened before it is closed`, async () => {
      const ports = { proxy: 0, bridge: 0, admin: 0 };
      for (const other of LISTENERS) ports[other] = (await tryListen(0)) as number;
      ports[name] = taken.port;
      const listen = Object.fromEntries(LISTENERS.map((l) => [l, `127.0.0.1:${ports[l]}`]));
      await redis.client().ping();
      const before = await connectionsReceived();
      const started = startTestGateway({
        listen,
        state: { store: 'redis', redis: { url: redis.url } },
      });
      await expect(started).rejects.toMatchObject({
        code: 'E_LISTEN',
        message: expect.stringContaining(`127.0.0.1:${taken.port} (listen.${name})`),
      });
      // The store connected (state and bus) before the listener failed, and let go since.
      expect(await connectionsReceived()).toBeGreaterThanOrEqual(before + 2);
      expect(await clientNames()).not.toContainEqual(expect.stringMatching(/^trajgate-/));
      for (const opened of LISTENERS.slice(0, i))
        expect(await tryListen(ports[opened]), `listen.${opened} still open`).toBe(ports[opened]);
    });
  }
});

it('a CA that cannot be parsed: E_CONFIG_READ naming tls.ca; nothing stays open', async () => {
  const ca = brokenCa();
  const before = await connectionsReceived();
  const started = startTestGateway({
    state: { store: 'redis', redis: { url: redis.url } },
    tls: { intercept: ['example.org'], ca },
  });
  await expect(started).rejects.toMatchObject({
    code: 'E_CONFIG_READ',
    message: expect.stringMatching(/^tls\.ca: .*ca\.pem is not a PEM certificate/),
  });
  expect(await connectionsReceived()).toBeGreaterThanOrEqual(before + 2);
  expect(await clientNames()).not.toContainEqual(expect.stringMatching(/^trajgate-/));
});
