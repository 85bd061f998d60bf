// Starters for the proxies under test. Each resolves { child, port } once the proxy accepts
// TCP connections, or { skipped: message } — a proxy that cannot start is reported, not fatal.
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, run, start, stop, waitForPort, which } from './procs.mjs';

async function ready(child, port) {
  const why = await waitForPort(child, port);
  if (why === null) return { child, port };
  await stop(child);
  return { skipped: `not available (${why})` };
}

export async function startFloor({ here, pin }) {
  const [port] = await freePorts(1);
  return ready(
    start(...pin(1, process.execPath, [join(here, 'floor-forwarder.mjs'), `${port}`])),
    port,
  );
}

/** Squid 5 in the foreground (-N, one process), no cache, loopback clients and origins only. */
export async function startSquid({ tmp, pin }) {
  const squid = which('squid');
  if (!squid) return { skipped: 'not installed, skipped' };
  const dir = join(tmp, 'squid');
  mkdirSync(dir);
  const [port] = await freePorts(1);
  const lines = [
    `http_port 127.0.0.1:${port}`,
    'acl bench_src src 127.0.0.1/32',
    'acl bench_dst dst 127.0.0.1/32',
    'http_access allow bench_src bench_dst',
    'http_access deny all',
    'cache deny all',
    'access_log none',
    `cache_log ${dir}/cache.log`,
    `pid_filename ${dir}/squid.pid`,
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'pinger_enable off',
    'icp_port 0',
    'htcp_port 0',
    'dns_nameservers 127.0.0.1', // origins are IP literals; never ask a real resolver
    'shutdown_lifetime 0 seconds',
  ];
  // As root squid drops to an unprivileged user, which must be able to write its log and pid.
  const user = process.getuid() === 0 ? (passwd('proxy') ?? passwd('nobody')) : null;
  if (user) {
    lines.push(`cache_effective_user ${user.name}`);
    chownSync(dir, user.uid, user.gid);
  }
  const conf = join(dir, 'squid.conf');
  writeFileSync(conf, lines.join('\n') + '\n');
  const started = await ready(start(...pin(1, squid, ['-N', '-f', conf])), port);
  if (started.skipped && existsSync(`${dir}/cache.log`)) {
    const last = readFileSync(`${dir}/cache.log`, 'utf8').trim().split('\n').pop();
    started.skipped = started.skipped.replace(/\)$/, `; cache.log: ${last})`);
  }
  return started;
}

function passwd(name) {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line) return null;
  const [, , uid, gid] = line.split(':');
  return { name, uid: Number(uid), gid: Number(gid) };
}

/**
 * trajgate from dist/ with a throwaway config that allows exactly the bench origins. Without
 * `force` it is tried only if `main.js --help` answers.
 */
export async function startTrajgate({ root, tmp, pin, force, upstream }) {
  const main = join(root, 'dist/cli/main.js');
  if (!existsSync(main))
    return { skipped: 'not available (dist/cli/main.js not found; npm run build)' };
  if (!force) {
    const help = await run(process.execPath, [main, '--help'], { timeoutMs: 5000 });
    if (help.code !== 0)
      return { skipped: `not available (main.js --help exited with ${help.code})` };
  }
  const { child, port } = await spawnTrajgate({
    main,
    dir: join(tmp, 'trajgate'),
    pin,
    lines: [
      'network:',
      `  allow: ["127.0.0.1:${upstream.http}", "127.0.0.1:${upstream.sink}"]`,
      '  allowPrivate: ["127.0.0.1/32"]',
      `  ports: [${upstream.http}, ${upstream.sink}]`,
    ],
  });
  return ready(child, port);
}

/**
 * Starts trajgate from dist/ on core 1 as its command runs it (the launcher's Node flags), on
 * a throwaway config in `dir`: workspace, journal and free listen ports, then `lines`.
 * Resolves { child, port } with the proxy's port; whether it listens is the caller's to check.
 */
export async function spawnTrajgate({ main, dir, pin, lines, env }) {
  mkdirSync(join(dir, 'workspace'), { recursive: true });
  const [proxy, admin, bridge] = await freePorts(3);
  const conf = join(dir, 'trajgate.yaml');
  const head = [
    'version: 1',
    `workspace: ${dir}/workspace`,
    `journal: ${dir}/journal.jsonl`,
    `listen: { proxy: 127.0.0.1:${proxy}, admin: 127.0.0.1:${admin}, bridge: 127.0.0.1:${bridge} }`,
  ];
  writeFileSync(conf, [...head, ...lines].join('\n') + '\n');
  const args = [...launcherFlags(main), main, 'start', '--config', conf];
  const child = start(...pin(1, process.execPath, args), { cwd: dir, ...(env ? { env } : {}) });
  return { child, port: proxy };
}

/**
 * The Node flags the `trajgate` command runs with, from its `#!/usr/bin/env -S node …` line, so
 * the bench measures what users run.
 */
export function launcherFlags(main) {
  const shebang = readFileSync(main, 'utf8').split('\n', 1)[0];
  const flags = /^#!\/usr\/bin\/env -S node(.*)$/.exec(shebang)?.[1] ?? '';
  return flags.split(' ').filter(Boolean);
}
