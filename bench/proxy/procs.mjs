// Child-process plumbing for run.mjs: every child gets its own process group so a stop (or our
// own exit, however it happens) takes its helpers down too; every wait is bounded.
import { spawn } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';

const live = new Set();
const killGroup = (child, signal) => {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
};
process.on('exit', () => live.forEach((child) => killGroup(child, 'SIGKILL')));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130));

/** A command-line option (from parseArgs) that must be a positive integer. */
export function positiveInt(values, name) {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Spawns `cmd` in a new process group, keeping its stdout and the tail of its stderr. */
export function start(cmd, args, options = {}) {
  const child = spawn(cmd, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdoutText = '';
  child.stderrTail = '';
  child.stdout.on('data', (d) => (child.stdoutText += d));
  child.stderr.on('data', (d) => (child.stderrTail = (child.stderrTail + d).slice(-4000)));
  child.exited = new Promise((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? signal)),
  );
  child.on('error', (err) => (child.stderrTail += err.message));
  live.add(child);
  child.exited.then(() => live.delete(child));
  return child;
}

const hasExited = (child) => child.exitCode !== null || child.signalCode !== null;

/** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the leader is gone. */
export async function stop(child, graceMs = 3000) {
  killGroup(child, 'SIGTERM');
  if ((await Promise.race([child.exited, sleep(graceMs).then(() => 'timeout')])) === 'timeout') {
    killGroup(child, 'SIGKILL');
    await child.exited;
  }
  killGroup(child, 'SIGKILL'); // stragglers that outlived the leader
  live.delete(child);
}

/** Runs to completion (killed after `timeoutMs`); resolves { code, stdout, stderr }. */
export async function run(cmd, args, { timeoutMs, ...options }) {
  const child = start(cmd, args, options);
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), timeoutMs);
  const code = await child.exited;
  clearTimeout(timer);
  return { code, stdout: child.stdoutText, stderr: child.stderrTail };
}

/** The first stdout line of `child`, parsed as JSON. */
export async function firstJsonLine(child, timeoutMs = 5000) {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(20)) {
    const nl = child.stdoutText.indexOf('\n');
    if (nl >= 0) return JSON.parse(child.stdoutText.slice(0, nl));
    if (hasExited(child)) break;
  }
  throw new Error(
    `${child.spawnargs.join(' ')}: no output (${child.stderrTail.trim() || 'no stderr'})`,
  );
}

/** `what`, with the last line `child` wrote on stderr. */
const withStderr = (child, what) => {
  const last = child.stderrTail.trim().split('\n').pop();
  return last ? `${what}; last stderr: ${last}` : what;
};

/**
 * The first match of `re` in what `child` prints (stdout or stderr), as it prints it: how a
 * server started on port 0 tells its port. Resolves { match } or { why } (it exited first, or
 * `timeoutMs` passed).
 */
export function printed(child, re, timeoutMs = 10_000) {
  return new Promise((resolve) => {
    let seen = child.stdoutText + child.stderrTail;
    const done = (result) => {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.stderr.off('data', onData);
      resolve(result);
    };
    const onData = (d) => {
      seen = (seen + d).slice(-16_384);
      const match = re.exec(seen);
      if (match) done({ match });
    };
    const timer = setTimeout(
      () => done({ why: withStderr(child, `printed no ${re} within ${timeoutMs / 1000} s`) }),
      timeoutMs,
    );
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.exited.then((code) =>
      done({ why: withStderr(child, `exited with ${code} before it printed ${re}`) }),
    );
    onData('');
  });
}

/** TCP ports process `pid` itself listens on: its socket inodes among the kernel's listeners. */
function listenersOf(pid) {
  const inodes = new Set();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkOr(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    }
  } catch {
    return []; // gone
  }
  const ports = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      // sl local_address rem_address st … inode; LISTEN is state 0A
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

const readlinkOr = (path) => {
  try {
    return readlinkSync(path);
  } catch {
    return ''; // closed meanwhile
  }
};

/**
 * Waits until `child` itself listens on 127.0.0.1:`port` (never mistaking another process
 * that holds the port for it). Resolves null once it does, else why not.
 */
async function listensOn(child, port, timeoutMs) {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(20)) {
    if (listenersOf(child.pid).includes(port)) return null;
    if (hasExited(child))
      return withStderr(
        child,
        `exited with ${child.exitCode ?? child.signalCode} before it listened on 127.0.0.1:${port}`,
      );
    if (Date.now() > deadline)
      return withStderr(child, `did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000} s`);
  }
}

/** A loopback port free a moment ago (closed again: whoever binds it next may lose a race). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * For servers that cannot listen on port 0 (squid refuses it): `launch(port)` starts one on a
 * port free a moment ago, and it counts once it listens there itself. One that exited (another
 * process took the port between) is started again on another port, `attempts` times at most.
 * Resolves { child, port } or { why } (the child stopped).
 */
export async function startOnFreePort(launch, { attempts = 3, timeoutMs = 10_000 } = {}) {
  let why = '';
  for (let i = 0; i < attempts; i++) {
    const port = await freePort();
    const child = launch(port);
    why = (await listensOn(child, port, timeoutMs)) ?? '';
    if (why === '') return { child, port };
    const exited = hasExited(child);
    await stop(child);
    if (!exited) break; // it runs but does not listen: another port would not help
  }
  return { why };
}

/** Absolute path of an executable on PATH (or the sbin dirs a non-root PATH may lack). */
export function which(name) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin', '/usr/local/sbin'];
  for (const dir of dirs.filter(Boolean)) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not in this directory
    }
  }
  return null;
}
