import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { tempConfig } from '../helpers/child-gateway.js';
import { spawnCli } from '../helpers/cli.js';
import { exchange } from '../helpers/raw.js';

/**
 * `trajgate start` says what the open-files limit allows, warns when limits.maxConnections
 * needs more, and under a small limit refuses connections with a 503 before the kernel would
 * refuse them unseen (EMFILE); the log says so once, the metric counts each.
 */
const ADMIN = 'admin-token-0123456789abcdef';
const children: ReturnType<typeof spawnCli>[] = [];
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
});

async function start(extra: Record<string, unknown>, via: string[] = []) {
  const { config } = tempConfig({ admin: { token: ADMIN }, ...extra });
  const cli = spawnCli(['start', '--config', config], { via });
  children.push(cli);
  const banner = await cli.waitFor(/review page on http:\/\/127\.0\.0\.1:\d+\//, 20_000);
  const port = (re: RegExp) => Number(re.exec(banner)?.[1]);
  return {
    cli,
    banner,
    proxy: port(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)/),
    admin: port(/review page on http:\/\/127\.0\.0\.1:(\d+)\//),
  };
}

/** The hard open-files limit of this process: a child's Node raises its soft limit to it. */
const HARD = /^Max open files\s+\d+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];

describe('trajgate start and the open-files limit', () => {
  it('prints the limit and the connections it allows; warns when maxConnections needs more', async () => {
    const fits = await start({});
    expect(fits.banner).toContain(
      `trajgate: open files limit ${HARD} (ulimit -n); allows 4096 client connection(s) at once (limits.maxConnections 4096, up to 2 files each)`,
    );
    expect(fits.banner).not.toContain('warning: limits.maxConnections');
    fits.cli.child.kill('SIGTERM');
    await fits.cli.exited;

    const over = await start({ limits: { maxConnections: 1_000_000 } });
    const allowed = Math.floor((Number(HARD) - 64) / 2);
    expect(over.banner).toContain(`allows ${allowed} client connection(s) at once`);
    expect(over.banner).toContain(
      `warning: limits.maxConnections 1000000 may need 2000064 open files, more than the limit ${HARD}`,
    );
    over.cli.child.kill('SIGTERM');
    await over.cli.exited;
  });

  it('under ulimit -n 120 the 29th connection is answered 503, logged once, counted each time', async () => {
    const g = await start({}, ['prlimit', '--nofile=120:120', '--']);
    expect(g.banner).toContain('open files limit 120 (ulimit -n); allows 28 client connection(s)');
    expect(g.banner).toContain('warning: limits.maxConnections 4096 may need 8256 open files');
    // Connections are accepted in the order they came: the 29th after the 28 held here.
    const held: Socket[] = [];
    for (let i = 0; i < 28; i++) {
      const s = connect(g.proxy, '127.0.0.1');
      s.on('error', () => {});
      held.push(s);
      await new Promise((resolve) => s.once('connect', resolve));
    }
    const reason =
      'trajgate: 28 client connections are open, all the open-files limit (ulimit -n 120) leaves room for: retry later, or raise ulimit -n\n';
    for (const path of ['/one', '/two']) {
      const refused = await exchange(
        g.proxy,
        `GET http://127.0.0.1:9${path} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      expect(refused.status).toBe(503);
      expect(refused.body).toBe(reason);
    }
    const metrics = (await adminClient(g.admin, ADMIN).get('/metrics')).text;
    expect(metrics).toMatch(/^trajgate_limit_refusals_total\{limit="RLIMIT_NOFILE"\} 2$/m);
    const lines = () => g.cli.output().stderr.split('\n');
    expect(lines().filter((l) => l.includes('refused at RLIMIT_NOFILE'))).toHaveLength(1);

    for (const s of held) s.destroy();
    g.cli.child.kill('SIGTERM');
    expect(await g.cli.exited).toBe(0);
    // The one left out of the log is summed up when the window ends, here at shutdown.
    expect(lines().filter((l) => l.includes('1 more refused at RLIMIT_NOFILE'))).toHaveLength(1);
  });
});
