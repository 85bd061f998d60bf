import { spawn } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { tempDir } from './tmp.js';

export const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * A real `redis-server` for one test file: no TCP port, a unix socket in a temp folder, no
 * persistence (a restart comes back empty, unless it restores a dump). `kill` and `start` again reuse the same socket, as an
 * operator restarting Redis in place would.
 */
export interface TestRedis {
  readonly socket: string;
  /** `unix:///…/redis.sock`, as trajgate's `state.redis.url` takes it. */
  readonly url: string;
  /** Whether a server is running now. */
  readonly running: boolean;
  /** Starts it (again, empty) and resolves once it accepts connections. */
  start(): Promise<void>;
  /** SIGKILL (an outage), resolving once the process is gone. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that hangs, then answers again with everything it held. */
  freeze(): void;
  thaw(): void;
  /** SAVE, then a copy of the dump under a name of its own: what it held now, for `restore`. */
  dump(): Promise<string>;
  /** Kills it and starts it again from `dump` (an operator restoring a backup); empty after. */
  restore(dump: string): Promise<void>;
  /** A client on the socket, closed after the file (for reading what replicas wrote). */
  client(): Redis;
}

export async function startRedis(): Promise<TestRedis> {
  const dir = tempDir('trajgate-redis-');
  const socket = join(dir, 'redis.sock');
  let child: ChildProcess | null = null;
  const clients: Redis[] = [];
  let dumps = 0;

  const start = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const args = ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700'];
      args.push('--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'notice');
      const proc = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      let out = '';
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`redis-server not ready within 10 s: ${out}`));
      }, 10_000);
      const onData = (d: Buffer) => {
        out += d.toString();
        if (/ready to accept connections/i.test(out)) {
          clearTimeout(timer);
          proc.stdout?.off('data', onData);
          proc.stdout?.resume();
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      proc.once('exit', (code, signal) => {
        if (child === proc) child = null;
        clearTimeout(timer);
        reject(new Error(`redis-server exited (${code ?? signal}) before it was ready: ${out}`));
      });
    });

  const kill = async (): Promise<void> => {
    const proc = child;
    if (proc === null) return;
    const gone = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill('SIGKILL');
    await gone;
  };

  // Also when the file fails before its hooks run (a throw while collecting): no stray server.
  process.once('exit', () => child?.kill('SIGKILL'));
  await start();
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await kill();
  });
  return {
    socket,
    url: `unix://${socket}`,
    get running() {
      return child !== null;
    },
    start,
    kill,
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    client,
    async dump() {
      const c = client();
      await c.save();
      c.disconnect();
      const copy = join(dir, `backup-${++dumps}.rdb`);
      copyFileSync(join(dir, 'dump.rdb'), copy);
      return copy;
    },
    async restore(dump) {
      await kill();
      copyFileSync(dump, join(dir, 'dump.rdb'));
      await start();
      // Loaded: a later `start` comes back empty again.
      rmSync(join(dir, 'dump.rdb'));
    },
  };

  function client(): Redis {
    const c = new Redis({ path: socket, lazyConnect: false, maxRetriesPerRequest: 1 });
    c.on('error', () => {}); // an outage the test caused; its calls reject
    clients.push(c);
    return c;
  }
}
