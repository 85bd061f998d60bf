// Child-process plumbing for run.mjs: every child gets its own process group so a stop (or our
// own exit, however it happens) takes its helpers down too; every wait is bounded.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
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

const connects = (port) =>
  new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500);
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
    sock.once('timeout', () => done(false));
  });

/** Polls a TCP connect to 127.0.0.1:port; null once it accepts, else why it did not. */
export async function waitForPort(child, port, tries = 50, intervalMs = 200) {
  const why = (what) => {
    const last = child.stderrTail.trim().split('\n').pop();
    return last ? `${what}; last stderr: ${last}` : what;
  };
  for (let i = 0; i < tries; i++) {
    if (await connects(port)) return null;
    if (hasExited(child)) {
      return why(
        `exited with ${child.exitCode ?? child.signalCode} before 127.0.0.1:${port} accepted`,
      );
    }
    await sleep(intervalMs);
  }
  return why(
    `127.0.0.1:${port} did not accept connections within ${(tries * intervalMs) / 1000} s`,
  );
}

/** `n` distinct free loopback ports (all held open together so none repeats). */
export async function freePorts(n) {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise((resolve, reject) => {
          const server = net.createServer().once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
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
