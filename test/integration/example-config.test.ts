import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

/**
 * The example config starts as written, the way the README says to run it from a clone
 * (`npx trajgate start --config …`): no environment variables, paths next to the file, its
 * workspace beside config/ and its data outside that, the data it writes git-ignored. Only the
 * listen addresses change (port 0: tests bind no fixed port), and the banner shows the real
 * ones.
 */
const ROOT = join(import.meta.dirname, '../..');
const EXAMPLE = join(ROOT, 'config/trajgate.example.yaml');

let stop: (() => Promise<string>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** `npx trajgate start --config file` in its own process group (npx runs node under it). */
function npxStart(file: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, TRAJGATE_LOG_LEVEL: 'warn' };
  for (const name of ['AGENT_1_TOKEN', 'TRAJGATE_ADMIN_TOKEN', 'TRAJGATE_DATA']) delete env[name];
  const child = spawn('npx', ['--no-install', 'trajgate', 'start', '--config', file], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  // 'close': npx and the gateway under it have both let go of the output.
  const closed = new Promise<string>((r) => child.once('close', () => r(output)));
  stop = async () => {
    if (child.exitCode === null && child.signalCode === null)
      process.kill(-(child.pid as number), 'SIGTERM');
    return closed;
  };
  const banner = new Promise<string>((resolve, reject) => {
    const seen = () => {
      if (/review page on http:\/\/\S+\/ /.test(output)) resolve(output);
    };
    child.stderr.on('data', seen);
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening:\n${output}`)));
  });
  return { banner };
}

describe('config/trajgate.example.yaml', () => {
  it('starts as written with no environment variables; the banner names what it runs', async () => {
    // The clone's layout: config/ and workspace/ side by side.
    const root = tempDir();
    const dir = join(root, 'config');
    mkdirSync(dir);
    mkdirSync(join(root, 'workspace'));
    const file = join(dir, 'trajgate.example.yaml');
    let replaced = 0;
    const text = readFileSync(EXAMPLE, 'utf8').replace(
      /^(\s+(?:proxy|bridge|admin): )127\.0\.0\.1:\d+/gm,
      (_, key: string) => (replaced++, `${key}127.0.0.1:0`),
    );
    expect(replaced).toBe(3);
    writeFileSync(file, text);

    const { banner } = npxStart(file);
    const out = await banner;
    expect(out).toContain(`trajgate: config ${file}; workspace ${join(root, 'workspace')}\n`);
    expect(out).toContain(`trajgate: journal ${join(dir, 'data/journal.jsonl')} (0 records`);
    const port = (re: RegExp) => Number(re.exec(out)?.[1]);
    const proxy = port(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)\n/);
    const bridge = port(/bridge: MCP at http:\/\/127\.0\.0\.1:(\d+)\/mcp → upstream /);
    const admin = port(/review page on http:\/\/127\.0\.0\.1:(\d+)\//);
    for (const p of [proxy, bridge, admin]) expect(p).toBeGreaterThan(0);
    expect(out).toContain(
      `bridge: MCP at http://127.0.0.1:${bridge}/mcp → upstream http://127.0.0.1:9000/mcp (runner hooks: POST http://127.0.0.1:${bridge}/events)`,
    );
    // The example allows something, so no "allows nothing yet"; interception is off.
    expect(out).not.toContain('allows nothing yet');
    expect(out).not.toContain('TLS interception');

    // The admin token was generated next to the journal, and works.
    const token = readFileSync(join(dir, 'data/admin-token'), 'utf8').trim();
    const res = await request(`http://127.0.0.1:${admin}/api/health`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(await stop?.()).toMatch(
      /trajgate: stopped in \d+ ms; everything drained; journal synced\n/,
    );
    stop = undefined;
  });

  it('what it writes next to itself in a clone is git-ignored', () => {
    if (!existsSync(join(ROOT, '.git'))) return;
    const paths = [
      'config/data/journal.jsonl',
      'config/data/admin-token',
      'config/certs/ca-key.pem',
      'workspace/notes.txt',
    ];
    const r = spawnSync('git', ['check-ignore', ...paths], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stdout.trim().split('\n')).toEqual(paths);
    // The folder itself is in the clone, so that the config starts as written.
    expect(spawnSync('git', ['check-ignore', 'workspace/README.md'], { cwd: ROOT }).status).toBe(1);
  });
});
