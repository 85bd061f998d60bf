import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { stringify } from 'yaml';
import { spawnCli } from './cli.js';
import { withTestEngine } from './engine.js';
import { tempDir } from './tmp.js';

/** `trajgate start` in a child process, with the ports it printed on stderr. */
export interface ChildGateway {
  readonly pid: number;
  readonly proxyPort: number;
  readonly adminPort: number;
  readonly proxyUrl: string;
  /** Everything it printed on stderr up to the admin line (the start banner). */
  readonly banner: string;
  /** Everything it has printed on stderr so far. */
  stderr(): string;
  readonly exited: Promise<number | null>;
  readonly signalled: Promise<NodeJS.Signals | null>;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildGateway>();
/** spawnGateway's children: a test that forgot to stop one leaves no gateway running. */
const spawned = new Set<ChildProcess>();
afterAll(async () => {
  for (const c of running) await c.kill('SIGKILL');
  for (const child of spawned)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Writes `config` as YAML to `dir/trajgate.yaml` and returns its path. */
export function writeConfig(dir: string, config: Record<string, unknown>): string {
  const file = join(dir, 'trajgate.yaml');
  // A whole config (not one written to be refused) runs on the test run's engine.
  writeFileSync(file, stringify('version' in config ? withTestEngine(config) : config));
  return file;
}

/**
 * Starts the built CLI on a config whose listeners are on 127.0.0.1 (port 0 or free ports),
 * `env` added to its environment; resolves once they listen.
 */
export async function startChild(
  configFile: string,
  ms = 10_000,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildGateway> {
  const cli = spawnCli(['start', '--config', configFile], { env });
  const signalled = new Promise<NodeJS.Signals | null>((r) =>
    cli.child.once('exit', (_code, signal) => r(signal)),
  );
  const all = await cli.waitFor(/review page on http:\/\/127\.0\.0\.1:\d+\//, ms);
  const port = (re: RegExp) => Number(re.exec(all)?.[1]);
  const proxyPort = port(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const adminPort = port(/review page on http:\/\/127\.0\.0\.1:(\d+)\//);
  const child: ChildGateway = {
    pid: cli.child.pid as number,
    proxyPort,
    adminPort,
    proxyUrl: `http://127.0.0.1:${proxyPort}`,
    banner: cli.output().stderr,
    stderr: () => cli.output().stderr,
    exited: cli.exited,
    signalled,
    async kill(signal) {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill(signal);
      const timer = setTimeout(() => cli.child.kill('SIGKILL'), 10_000);
      const [code, sig] = await Promise.all([cli.exited, signalled]);
      clearTimeout(timer);
      running.delete(child);
      return { code, signal: sig };
    },
  };
  running.add(child);
  return child;
}

/**
 * A config and its journal in a fresh temp folder, its workspace in another (listeners on port
 * 0), `extra` over it.
 */
export function tempConfig(extra: Record<string, unknown>): { journal: string; config: string } {
  const dir = tempDir();
  const journal = join(dir, 'journal.jsonl');
  const config = writeConfig(dir, {
    version: 1,
    workspace: tempDir('trajgate-ws-'),
    journal,
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    ...extra,
  });
  return { journal, config };
}

/**
 * `trajgate start` on a fresh temp config (listeners on port 0, `extra` keys merged over it),
 * logging warnings only (`env` added to the environment): the spawned CLI (output, waitFor, exit), its journal and its ports.
 */
export async function spawnGateway(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const { journal, config } = tempConfig(extra);
  const cli = spawnCli(['start', '--config', config], {
    env: { TRAJGATE_LOG_LEVEL: 'warn', ...env },
  });
  spawned.add(cli.child);
  cli.child.once('exit', () => spawned.delete(cli.child));
  const banner = await cli.waitFor(/review page on http:\/\/127\.0\.0\.1:\d+/);
  const port = (what: string) =>
    Number(new RegExp(`${what} http://127\\.0\\.0\\.1:(\\d+)`).exec(banner)?.[1]);
  return { cli, journal, proxy: port('proxy listening on'), admin: port('review page on') };
}

/** A gateway started on port 0, and a config for the operator naming the ports it got. */
export interface PortedGateway {
  /** The operator's config: the gateway's keys with the ports it listens on (`env` reads them). */
  readonly config: string;
  /** The config the gateway runs on (listeners on port 0; a reload reads this one). */
  readonly gatewayConfig: string;
  readonly journal: string;
  readonly workspace: string;
  readonly proxyPort: number;
  readonly bridgePort: number;
  readonly adminPort: number;
  /** Its keys as written (before `${VAR}`s are filled in). */
  readonly keys: Record<string, unknown>;
  readonly gateway: ChildGateway;
}

/**
 * `trajgate start` on a fresh temp config (listeners on 127.0.0.1 port 0, its workspace in
 * another folder, `extra` keys over it, `env` added), then the operator's copy of that config
 * naming the ports it listens on, for commands that read them from the file (`env`, operator
 * commands without --admin): the real ports are passed on, never guessed before binding.
 */
export async function startPorted(
  extra: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
): Promise<PortedGateway> {
  const dir = tempDir();
  const workspace = tempDir('trajgate-ws-');
  const journal = join(dir, 'journal.jsonl');
  const keys = {
    version: 1,
    workspace,
    journal,
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    ...extra,
  };
  const gatewayConfig = writeConfig(dir, keys);
  const gateway = await startChild(gatewayConfig, 20_000, env);
  const bridgePort = Number(/bridge[^\n]*? http:\/\/127\.0\.0\.1:(\d+)/.exec(gateway.banner)?.[1]);
  const { proxyPort, adminPort } = gateway;
  const config = join(dir, 'operator.yaml');
  const listen = {
    proxy: `127.0.0.1:${proxyPort}`,
    bridge: `127.0.0.1:${bridgePort}`,
    admin: `127.0.0.1:${adminPort}`,
  };
  writeFileSync(config, stringify(withTestEngine({ ...keys, listen })));
  return {
    config,
    gatewayConfig,
    journal,
    workspace,
    proxyPort,
    bridgePort,
    adminPort,
    keys,
    gateway,
  };
}
