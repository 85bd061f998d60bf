import { execFile, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { tempDir } from './tmp.js';

/** The `trajgate` program (what npm puts on the PATH): check from dist/hook/, the rest from dist/cli/. */
export const CLI = join(import.meta.dirname, '../../bin/trajgate.cjs');

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI to completion. */
export function runCli(
  args: string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): RunResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: options.input ?? '',
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs the built CLI to completion without blocking this process's event loop: needed when
 * the gateway under test runs in this process (spawnSync would deadlock it).
 */
export function runCliAsync(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 60_000,
      },
      (_err, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }),
    );
  });
}

/**
 * `trajgate export --session SESSION --har FILE [args]` of `journal` (through a config naming
 * it), in a new temp folder: the result and the file written.
 */
export async function exportHar(
  journal: string,
  session: string,
  args: string[] = [],
): Promise<RunResult & { out: string }> {
  const dir = tempDir();
  const out = join(dir, 'export.har');
  const config = join(dir, 'export.yaml');
  writeFileSync(config, stringify({ version: 1, workspace: dir, journal }));
  const r = await runCliAsync([
    'export',
    '--session',
    session,
    '--har',
    out,
    ...args,
    '--config',
    config,
  ]);
  return { ...r, out };
}

/** Starts the built CLI in the background; `waitFor` resolves when stderr shows the text. */
export function spawnCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; via?: readonly string[] } = {},
) {
  // `via`: a command the CLI runs under, e.g. ['prlimit', '--nofile=120:120', '--'].
  const [command, ...before] = [...(options.via ?? []), process.execPath];
  const child: ChildProcess = spawn(command as string, [...before, CLI, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    waitFor(text: string | RegExp, ms = 10_000): Promise<string> {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error(`timed out waiting for ${text}; stderr: ${stderr}`)),
          ms,
        );
        const check = () => {
          const all = stdout + stderr;
          if (typeof text === 'string' ? all.includes(text) : text.test(all)) {
            clearTimeout(deadline);
            resolve(all);
            return true;
          }
          return false;
        };
        if (check()) return;
        const onData = () => {
          if (check()) {
            child.stderr?.off('data', onData);
            child.stdout?.off('data', onData);
          }
        };
        child.stderr?.on('data', onData);
        child.stdout?.on('data', onData);
        child.once('exit', () => {
          if (!check()) {
            clearTimeout(deadline);
            reject(new Error(`exited before ${text}; stderr: ${stderr}`));
          }
        });
      });
    },
  };
}

/**
 * runCliAsync with `input` written to the CLI's standard input (hooks read JSON there) and
 * the exit code (null when killed by `timeoutMs`).
 */
export function runCliPiped(
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: { ...process.env, ...options.env },
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 60_000,
      },
      (err, stdout, stderr) => {
        const status = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ status, stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}

/**
 * The seed article's example (docs/rules.md § The rule): ALLOW, ALLOW, REVIEW: network,
 * PAUSE: network.
 */
export const SEED_EXAMPLE = [
  '{"kind":"command","target":"/tmp/agent-demo/tests"}',
  '{"kind":"write","target":"/tmp/agent-demo/report.json"}',
  '{"kind":"network","target":"https://example.test/api"}',
  '{"kind":"network","target":"https://example.test/api"}',
].join('\n');

/** Root reads and writes every file: what the gateway's user may do is tried as nobody. */
export const AS_ROOT = process.getuid?.() === 0;
export const NOBODY = 65534;

/**
 * `argv` to spawn as nobody (uid and gid 65534, no groups, through setpriv) when this process
 * is root; as it is otherwise (the test then closes the files to its own user instead).
 */
export function unprivileged(argv: readonly string[]): [string, string[]] {
  return AS_ROOT
    ? ['setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...argv]]
    : [argv[0] as string, argv.slice(1)];
}

/** runCli as nobody when root (see unprivileged). */
export function runCliUnprivileged(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): RunResult {
  const [command, argv] = unprivileged([process.execPath, CLI, ...args]);
  const r = spawnSync(command, argv, {
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `start` and `check-config` both exit 1 on `config` with exactly these lines on stderr. */
export function refusedByBoth(
  config: string,
  lines: readonly string[],
  run: (args: string[]) => RunResult = runCli,
): void {
  for (const args of [
    ['start', '--config', config],
    ['check-config', config],
  ]) {
    const r = run(args);
    expect(r.status, args[0]).toBe(1);
    expect(r.stderr, args[0]).toBe([...lines, ''].join('\n'));
  }
}
