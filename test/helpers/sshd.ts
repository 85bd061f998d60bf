import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll } from 'vitest';
import { GIT_SSH_COMMAND } from '../../src/cli/env-vars.js';
import { CLI } from './cli.js';
import { oneCommitRepo } from './git-http.js';
import { tempDir } from './tmp.js';

export interface SshGitServer {
  readonly port: number;
  /** `ssh://USER@127.0.0.1:PORT/…/repo.git`, a bare repository with one commit. */
  readonly repoUrl: string;
  /** The text of README in its one commit. */
  readonly readme: string;
  /**
   * Environment for git: GIT_SSH_COMMAND as `trajgate env` prints it, plus this server's key,
   * known host and no user config; PATH starts with a folder holding `trajgate` (the built CLI).
   */
  readonly gitEnv: NodeJS.ProcessEnv;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** sshd processes started so far (one per connection, once the gate is open). */
  readonly started: number;
  /**
   * While closed (the default is open), an accepted connection waits for `openGate` before
   * its sshd starts: a test can pause a session while a clone's tunnel is open and quiet.
   */
  closeGate(): void;
  openGate(): void;
}

const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' };

/**
 * A real OpenSSH server for git on loopback port 0. sshd cannot take port 0, and a port found
 * free then bound later is a race: so the test's own TCP server listens on port 0 and runs
 * `sshd -i` (inetd mode) for each connection it accepts, the socket as its stdin and stdout.
 * Host and user keys are made per server (ssh-keygen); the user is whoever runs the tests.
 */
export async function startSshGit(): Promise<SshGitServer> {
  const root = tempDir('trajgate-sshd-');
  const key = (name: string) => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(root, name)]);
    return readFileSync(join(root, `${name}.pub`), 'utf8').trim();
  };
  const hostKey = key('host_key');
  writeFileSync(join(root, 'authorized_keys'), `${key('user_key')}\n`);
  const config = join(root, 'sshd_config');
  writeFileSync(
    config,
    [
      `HostKey ${join(root, 'host_key')}`,
      `AuthorizedKeysFile ${join(root, 'authorized_keys')}`,
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PermitRootLogin prohibit-password',
      'PidFile none',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  // sshd as root wants its privilege separation folder (the system service makes it at start).
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  const readme = 'served by sshd and git-upload-pack\n';
  oneCommitRepo(root, readme);

  let gate: Promise<void> = Promise.resolve();
  let release = () => {};
  let accepted = 0;
  let started = 0;
  const children = new Set<ChildProcess>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.pause();
    void gate.then(() => {
      if (socket.destroyed) return;
      const sshd = spawn('/usr/sbin/sshd', ['-i', '-f', config], {
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      started++;
      children.add(sshd);
      sshd.once('exit', () => children.delete(sshd));
      socket.pipe(sshd.stdin);
      sshd.stdout.pipe(socket);
      sshd.stdin.on('error', () => socket.destroy());
      socket.on('error', () => sshd.kill());
      socket.once('close', () => sshd.kill());
      socket.resume();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  afterAll(() => {
    for (const s of sockets) s.destroy();
    for (const c of children) c.kill();
    server.close();
  });

  writeFileSync(join(root, 'known_hosts'), `[127.0.0.1]:${port} ${hostKey}\n`);
  const bin = join(root, 'bin');
  mkdirSync(bin);
  symlinkSync(CLI, join(bin, 'trajgate'));
  const ssh = [
    'ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes',
    `-i ${join(root, 'user_key')} -o UserKnownHostsFile=${join(root, 'known_hosts')}`,
    '-o StrictHostKeyChecking=yes',
  ].join(' ');
  const gitEnv = {
    ...GIT_ENV,
    HOME: root,
    PATH: [bin, dirname(process.execPath), process.env.PATH].join(':'),
    // As `trajgate env` prints it, with this server's key and known host.
    GIT_SSH_COMMAND: GIT_SSH_COMMAND.replace(/^ssh /, `${ssh} `),
  };
  return {
    port,
    repoUrl: `ssh://${userInfo().username}@127.0.0.1:${port}${join(root, 'repo.git')}`,
    readme,
    gitEnv,
    get accepted() {
      return accepted;
    },
    get started() {
      return started;
    },
    closeGate() {
      gate = new Promise((r) => (release = r));
    },
    openGate() {
      release();
    },
  };
}
