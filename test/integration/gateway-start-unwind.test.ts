import { createServer, Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
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

/** Listens on `port` and closes again: resolves true when the port was free. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Runs `start` and answers the servers that listened meanwhile with their ports: the gateway's
 * listeners on port 0 (every net/http server listens through net.Server's listen).
 */
async function listening(start: () => Promise<unknown>) {
  const opened: { server: Server; port: number }[] = [];
  const listen = Server.prototype.listen;
  const spy = vi.spyOn(Server.prototype, 'listen').mockImplementation(function (
    this: Server,
    ...args: unknown[]
  ) {
    this.once('listening', () =>
      opened.push({ server: this, port: (this.address() as AddressInfo).port }),
    );
    return Reflect.apply(listen, this, args) as Server;
  });
  try {
    return {
      started: await start().then(
        () => null,
        (err: unknown) => err,
      ),
      opened,
    };
  } finally {
    spy.mockRestore();
  }
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
      const listen = Object.fromEntries(
        LISTENERS.map((l) => [l, `127.0.0.1:${l === name ? taken.port : 0}`]),
      );
      await redis.client().ping();
      const before = await connectionsReceived();
      const { started, opened } = await listening(() =>
        startTestGateway({ listen, state: { store: 'redis', redis: { url: redis.url } } }),
      );
      expect(started).toMatchObject({
        code: 'E_LISTEN',
        message: expect.stringContaining(`127.0.0.1:${taken.port} (listen.${name})`),
      });
      // The store connected (state and bus) before the listener failed, and let go since.
      expect(await connectionsReceived()).toBeGreaterThanOrEqual(before + 2);
      expect(await clientNames()).not.toContainEqual(expect.stringMatching(/^trajgate-/));
      // The listeners before it opened, and are closed again: their ports free.
      expect(opened).toHaveLength(i);
      for (const { server, port } of opened) {
        expect(server.listening, `port ${port} still listening`).toBe(false);
        expect(await isFree(port), `port ${port} still held`).toBe(true);
      }
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
