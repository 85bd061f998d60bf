// What bench/state/run.mjs measures: loopback upstreams, a redis-server without persistence, and
// trajgate started as its command runs it (bench/proxy's spawnTrajgate: the launcher's Node
// flags, on core 1) with the memory store or sharing that Redis.
import { join } from 'node:path';
import { pin, pinned } from '../run-setup.mjs';
import { firstJsonLine, printed, start, startOnFreePort, stop, which } from '../proxy/procs.mjs';
import { spawnTrajgate } from '../proxy/targets.mjs';

export const agentToken = (id) => `${id}-token-0123456789abcdef`;
export const basic = (id) => Buffer.from(`${id}:${agentToken(id)}`).toString('base64');
export const ids = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** An HTTP upstream (bench/proxy/upstream.mjs: 200 with 64 bytes) on core 0: { child, port }. */
export async function startUpstream(here) {
  const child = start(...pin(0, process.execPath, [join(here, '../proxy/upstream.mjs')]));
  return { child, port: (await firstJsonLine(child)).http };
}

/** A TCP echo server on core 0 (tunnels for the pause probe): { child, port }. */
export async function startEcho() {
  const code =
    "const s=require('net').createServer(c=>{c.on('error',()=>{});c.pipe(c)});" +
    "s.listen(0,'127.0.0.1',()=>console.log(JSON.stringify({port:s.address().port})))";
  const child = start(...pin(0, process.execPath, ['-e', code]));
  return { child, port: (await firstJsonLine(child)).port };
}

/** redis-server on loopback TCP, core 0, no persistence: { child, url }. */
export async function startRedis(tmp) {
  const server = which('redis-server');
  if (!server) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
  const started = await startOnFreePort((port) =>
    start(
      ...pin(0, server, [
        ...['--port', `${port}`, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        ...['--dir', tmp, '--protected-mode', 'no'],
      ]),
    ),
  );
  if (started.why !== undefined) throw new Error(`redis-server did not start: ${started.why}`);
  return { child: started.child, url: `redis://127.0.0.1:${started.port}/0` };
}

/**
 * The config every trajgate of the run shares: `agents` (ids), the `allowed` upstream on the
 * allowlist, each request to `counted` counted against a boundary that never reviews (a state
 * change per decision), the network boundary (REVIEW at 1, PAUSE at 2, refused at once) only for
 * `stranger`, and the `echo` port allowlisted for tunnels.
 */
export function configLines({ agents, allowed, counted, stranger, echo }) {
  return [
    'agents:',
    ...agents.map((id) => `  - { id: ${id}, token: ${agentToken(id)} }`),
    'network:',
    `  allow: ["127.0.0.1:${allowed}", "127.0.0.1:${echo}"]`,
    '  allowPrivate: ["127.0.0.1/32"]',
    `  ports: [${allowed}, ${counted}, ${stranger}, ${echo}]`,
    'policy:',
    '  pause: block',
    '  boundaries:',
    `    network: { targets: ["127.0.0.1:${stranger}"] }`,
    `    counted: { kinds: [network], targets: ["127.0.0.1:${counted}"], reviewAt: 1000000000, pauseAt: 1000000001 }`,
  ];
}

/**
 * Starts one trajgate named `name` in `dir` (memory store when `redis` is null) on `cpus`
 * (taskset's list; core 1 by default, as bench/proxy runs the proxy under test). Resolves
 * { name, child, proxy, admin } once it listens, or throws with its last stderr line.
 */
export async function startGateway({ main, dir, name, redis, prefix, lines, cpus = '1' }) {
  const state = redis
    ? [
        'state:',
        '  store: redis',
        `  redis: { url: "${redis.url}", prefix: "${prefix}", replica: ${name}, timeout: 1s }`,
      ]
    : [];
  // spawnTrajgate pins to core 1; `cpus` may widen that (replicas sharing both cores).
  const onCpus = (_core, cmd, args) =>
    pinned ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
  const started = await spawnTrajgate({
    main,
    dir,
    pin: onCpus,
    lines: [...lines, `admin: { token: bench-admin-token-0123456789 }`, ...state],
  });
  if (started.why !== undefined) throw new Error(`trajgate ${name} did not start: ${started.why}`);
  const admin = await printed(started.child, /review page on http:\/\/127\.0\.0\.1:(\d+)/);
  if (!admin.match) {
    await stop(started.child);
    throw new Error(`trajgate ${name}: ${admin.why}`);
  }
  return {
    name,
    shared: redis !== null,
    child: started.child,
    proxy: started.port,
    admin: Number(admin.match[1]),
    journal: join(dir, 'data', 'journal.jsonl'),
  };
}

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';
