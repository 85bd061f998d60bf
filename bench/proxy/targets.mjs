// Starters for the proxies under test. Each resolves { child, port } once the proxy listens
// (on a port it chose itself where it can), or { skipped: message } — a proxy that cannot
// start is reported, not fatal.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { firstJsonLine, printed, run, start, startOnFreePort, stop, which } from './procs.mjs';

/** The floor forwarder on port 0; it prints the port it got once it listens. */
export async function startFloor({ here, pin }) {
  const child = start(...pin(1, process.execPath, [join(here, 'floor-forwarder.mjs')]));
  try {
    return { child, port: (await firstJsonLine(child)).port };
  } catch (err) {
    await stop(child);
    return { skipped: `not available (${err.message})` };
  }
}

/**
 * The lean floor: trajgate's lean engine with no policy (lean-floor.mjs, this checkout's dist).
 * With `intercept` ({ caDir, upstreamCa }) it ends TLS on a CONNECT as trajgate does.
 */
export async function startLeanFloor({ here, pin, root, intercept }) {
  if (!existsSync(join(root, 'dist/ingress/lean/lean-response.js')))
    return { skipped: 'not available (dist/ingress/lean not built; npm run build)' };
  const tls = intercept ? [intercept.caDir, intercept.upstreamCa] : [];
  const script = join(here, 'lean-floor.mjs');
  const child = start(...pin(1, process.execPath, [script, root, ...tls]));
  try {
    return { child, port: (await firstJsonLine(child)).port };
  } catch (err) {
    await stop(child);
    return { skipped: `not available (${err.message})` };
  }
}

/**
 * sandbox-runtime's HTTP proxy (`sandbox-runtime-proxy.mjs`) on port 0, allowing every host. With
 * `upstreamCa` (a PEM file) it terminates TLS, verifying the upstream against the system roots
 * and that file (NODE_EXTRA_CA_CERTS, as the sandbox reads it). Its folder `tmp`/`name` is its
 * TMPDIR (its CA goes there). Resolves { child, port, version, ca } (`ca` with TLS termination:
 * its CA certificate, for the client to trust) or { skipped }.
 */
export async function startSandboxRuntime({ tmp, pin, name = 'sandbox-runtime', upstreamCa }) {
  const dir = join(tmp, name);
  mkdirSync(dir);
  const launcher = join(dirname(fileURLToPath(import.meta.url)), 'sandbox-runtime-proxy.mjs');
  const args = [launcher, ...(upstreamCa ? ['--tls-terminate'] : [])];
  const env = { ...process.env, TMPDIR: dir };
  if (upstreamCa) env.NODE_EXTRA_CA_CERTS = upstreamCa;
  const child = start(...pin(1, process.execPath, args), { env });
  try {
    return { child, ...(await firstJsonLine(child, 10_000)) };
  } catch (err) {
    await stop(child);
    return { skipped: `not available (${err.message})` };
  }
}

/**
 * Squid 5 in the foreground (-N: one process, plus any helpers it forks, in its process group),
 * no cache, loopback clients and origins only. Its folder is `tmp`/`name`; `prepare(dir)` may
 * write files there first and resolves extra config lines (it throws to skip squid);
 * `httpPort(port)` is the http_port line. As root squid drops to `proxy`: the folder and all
 * in it are handed to that user.
 */
export async function startSquid({
  tmp,
  pin,
  name = 'squid',
  prepare = async () => [],
  httpPort = (port) => `http_port 127.0.0.1:${port}`,
}) {
  const squid = which('squid');
  if (!squid) return { skipped: 'not installed, skipped' };
  const dir = join(tmp, name);
  mkdirSync(dir);
  let extra;
  try {
    extra = await prepare(dir);
  } catch (err) {
    return { skipped: `not available (${err.message})` };
  }
  const lines = [
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
    ...extra,
  ];
  // As root squid drops to an unprivileged user, which must be able to write its log and pid
  // (and whatever `prepare` left there, e.g. a certificate database).
  const user = process.getuid() === 0 ? (passwd('proxy') ?? passwd('nobody')) : null;
  if (user) {
    lines.push(`cache_effective_user ${user.name}`);
    // Its helpers (e.g. security_file_certgen) open files there as that user: `tmp` (0700
    // from mkdtemp) must let it through, without letting it list.
    chmodSync(tmp, statSync(tmp).mode | 0o111);
    for (const path of [dir, ...readdirSync(dir, { recursive: true }).map((f) => join(dir, f))])
      chownSync(path, user.uid, user.gid);
  }
  const conf = join(dir, 'squid.conf');
  // Squid refuses http_port 0, so it gets a port free a moment ago (again if it lost it).
  const started = await startOnFreePort((port) => {
    writeFileSync(conf, [httpPort(port), ...lines].join('\n') + '\n');
    return start(...pin(1, squid, ['-N', '-f', conf]));
  });
  const log = `${dir}/cache.log`;
  const lastLog = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').pop() : '');
  // `lastLog()`: the last line of cache.log, for a squid that stopped answering later.
  if (started.why === undefined) return { ...started, lastLog };
  const last = lastLog();
  return { skipped: `not available (${started.why}${last ? `; cache.log: ${last}` : ''})` };
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
 * `force` it is tried only if `trajgate --help` answers. `socks`: also `listen.socks` (a
 * baseline checkout from before it existed would refuse the key); `engine`: its `engine`
 * (absent: the config's default).
 */
export async function startTrajgate({
  root,
  tmp,
  pin,
  force,
  upstream,
  name,
  chain,
  socks,
  engine,
  lines = [],
}) {
  const main = join(root, 'bin/trajgate.cjs');
  if (!existsSync(join(root, 'dist/cli/main.js')))
    return { skipped: 'not available (dist/cli/main.js not found; npm run build)' };
  if (!force) {
    const help = await run(process.execPath, [main, '--help'], { timeoutMs: 5000 });
    if (help.code !== 0)
      return { skipped: `not available (trajgate --help exited with ${help.code})` };
  }
  const dir = join(tmp, name ?? 'trajgate');
  const started = await spawnTrajgate({
    main,
    dir,
    pin,
    socks,
    // `chain`: false turns the journal's hash chain off (run.mjs measures what it costs).
    ...(chain === false ? { journal: `{ path: ${dir}/data/journal.jsonl, chain: false }` } : {}),
    lines: [
      'network:',
      `  allow: ["127.0.0.1:${upstream.http}", "127.0.0.1:${upstream.sink}"]`,
      '  allowPrivate: ["127.0.0.1/32"]',
      `  ports: [${upstream.http}, ${upstream.sink}]`,
      ...(engine === undefined ? [] : [`engine: ${engine}`]),
      ...lines,
    ],
  });
  return started.why === undefined ? started : { skipped: `not available (${started.why})` };
}

/**
 * trajgate intercepting TLS (bench/tls and run.mjs's intercepted phase): `trajgate ca init`
 * into `tmp`/`name`, then started with `tls.intercept` = `intercept` (host:port list), the
 * upstreams verified against the test CA, `allow` (patterns) and `ports` allowed on loopback,
 * logs at `warn`, then `lines` (more config) and `env` (more variables). Resolves
 * { child, port, ca } (`ca`: its CA certificate, for the client to trust) or { skipped }.
 */
export async function startInterceptingTrajgate({
  root,
  tmp,
  pin,
  name,
  intercept,
  allow,
  ports,
  lines = [],
  env = {},
}) {
  const main = join(root, 'bin/trajgate.cjs');
  const dir = join(tmp, name ?? 'trajgate');
  const init = await run(process.execPath, [main, 'ca', 'init', '--dir', join(dir, 'certs')], {
    timeoutMs: 15_000,
  });
  if (init.code !== 0) return { skipped: `ca init failed: ${init.stderr.trim()}` };
  const started = await spawnTrajgate({
    main,
    dir,
    pin,
    env: { ...process.env, ...env, TRAJGATE_LOG_LEVEL: 'warn' },
    lines: [
      'tls:',
      `  intercept: ${JSON.stringify(intercept)}`,
      `  ca: ${dir}/certs`,
      `  upstreamCa: [${join(root, 'test/fixtures/tls/ca.pem')}]`,
      'network:',
      `  allow: ${JSON.stringify(allow)}`,
      '  allowPrivate: ["127.0.0.0/8"]',
      `  ports: [${ports.join(', ')}]`,
      ...lines,
    ],
  });
  if (started.why !== undefined) return { skipped: `not available (${started.why})` };
  return { ...started, ca: join(dir, 'certs/ca.pem') };
}

/**
 * Starts trajgate from dist/ on core 1 as its command runs it (the launcher's Node flags), on
 * a throwaway config in `dir`: workspace, journal and listeners on port 0 (with `socks`, a
 * SOCKS5 listener too), then `lines`. Resolves { child, port, socksPort } once the proxy
 * listens (its start lines say where), or { why } when it did not start (the child is stopped).
 */
export async function spawnTrajgate({ main, dir, pin, lines, env, journal, socks }) {
  mkdirSync(join(dir, 'workspace'), { recursive: true });
  const conf = join(dir, 'trajgate.yaml');
  const head = [
    'version: 1',
    `workspace: ${dir}/workspace`,
    // The journal's folder is trajgate's own, apart from the workspace (start refuses an overlap).
    `journal: ${journal ?? `${dir}/data/journal.jsonl`}`,
    `listen: { proxy: 127.0.0.1:0, admin: 127.0.0.1:0, bridge: 127.0.0.1:0${socks ? ', socks: 127.0.0.1:0' : ''} }`,
  ];
  writeFileSync(conf, [...head, ...lines].join('\n') + '\n');
  const args = [...launcherFlags(main), main, 'start', '--config', conf];
  const child = start(...pin(1, process.execPath, args), { cwd: dir, ...(env ? { env } : {}) });
  const listening = socks
    ? /proxy listening on http:\/\/127\.0\.0\.1:(\d+)\n.*SOCKS5 listening on 127\.0\.0\.1:(\d+)/
    : /proxy listening on http:\/\/127\.0\.0\.1:(\d+)/;
  const { match, why } = await printed(child, listening);
  if (match) return { child, port: Number(match[1]), socksPort: socks ? Number(match[2]) : null };
  await stop(child);
  return { why };
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
