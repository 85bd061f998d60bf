// The gateway under load: `node bin/trajgate.cjs start` in its own process group, pinned to
// core 1 with taskset when there is one; ports parsed from its banner; RSS read from /proc.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { launcherFlags } from '../proxy/targets.mjs';

const MAIN = join(import.meta.dirname, '../../bin/trajgate.cjs');
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

const hasTaskset = () => spawnSync('taskset', ['-V']).status === 0;

/** Pins this process (all its threads) to `cpus`, when taskset exists; returns whether it did. */
export function pinSelf(cpus) {
  if (!hasTaskset()) return false;
  return spawnSync('taskset', ['-a', '-cp', cpus, String(process.pid)]).status === 0;
}

/** Starts the gateway on `configFile`; resolves once both listeners are up (bounded). */
export async function startGateway(configFile, { cpu = '1', timeoutMs = 15_000 } = {}) {
  const gateway = [...launcherFlags(MAIN), MAIN, 'start', '--config', configFile];
  const [cmd, args] = hasTaskset()
    ? ['taskset', ['-c', cpu, process.execPath, ...gateway]]
    : [process.execPath, gateway];
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r(code ?? signal)));
  const deadline = Date.now() + timeoutMs;
  let m;
  while (!(m = /review page on http:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr))) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`gateway did not start: ${stderr}`);
    await sleep(20);
  }
  const proxyPort = Number(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)[1]);
  return {
    pid: child.pid,
    proxyPort,
    adminPort: Number(m[1]),
    stderr: () => stderr,
    /** SIGTERM, SIGKILL after `graceMs`; resolves the exit code (or signal). */
    async stop(graceMs = 15_000) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const result = await Promise.race([exited, sleep(graceMs).then(() => 'timeout')]);
      if (result === 'timeout') {
        process.kill(-child.pid, 'SIGKILL');
        await exited;
      }
      live.delete(child);
      return result;
    },
  };
}

/**
 * Writes `dir`/trajgate.yaml for `sessions` agents (`agent-000`…, random tokens): loopback
 * listeners on port 0, the journal in `dir`/data and the workspace `dir`/workspace (apart, as
 * start requires), 127.0.0.1:`allowedPort` allowlisted, `extra` keys added. Returns the
 * file's path, the agents and the journal's path.
 */
export function writeConfig(dir, { sessions, allowedPort, adminToken, ...extra }) {
  const agents = Array.from({ length: sessions }, (_, i) => ({
    id: `agent-${String(i).padStart(3, '0')}`,
    token: `token-${i}-${Math.random().toString(36).slice(2)}-0123456789`,
  }));
  const journal = join(dir, 'data', 'journal.jsonl');
  const config = join(dir, 'trajgate.yaml');
  mkdirSync(join(dir, 'workspace'), { recursive: true });
  const keys = {
    version: 1,
    workspace: join(dir, 'workspace'),
    journal,
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents,
    network: { allow: [`127.0.0.1:${allowedPort}`], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: adminToken },
    ...extra,
  };
  writeFileSync(config, JSON.stringify(keys));
  return { config, agents, journal };
}

/** VmRSS and VmHWM (peak) of `pid` in MB, or null once it is gone. */
export function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** A keep-alive upstream on loopback port 0 that answers 200 with a short body. */
export async function startUpstream() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-length': 3 }).end('ok\n'));
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}
