import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startChild, tempConfig } from '../helpers/child-gateway.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The hint `start` prints (the agent's token written as TOKEN) is enough for curl and git, which read only the lower-case
 * `http_proxy`: run with nothing else in their environment, their requests reach the upstream
 * through trajgate and are journaled, not sent direct.
 */
const TOKEN = 'agent-1-token-0123456789abcdef';

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: 60_000 }, (err) =>
      resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0),
    );
  });
}

describe('the start hint', () => {
  it('prints both cases, and the lower-case ones alone carry curl and git through trajgate', async () => {
    const up = await startUpstream();
    const allowed = `127.0.0.1:${up.port}`;
    const { config, journal } = tempConfig({
      agents: [{ id: 'agent-1', token: TOKEN }],
      network: { allow: [allowed], allowPrivate: ['127.0.0.0/8'] },
    });
    const g = await startChild(config);
    const printed = /point an agent at it: (.*)\n/;
    await waitFor(() => printed.test(g.stderr()));
    const hint = printed.exec(g.stderr())?.[1] ?? '';
    const vars = Object.fromEntries(hint.split(' ').map((kv) => kv.split(/=(.*)/s).slice(0, 2)));
    // The agent's secret is never printed: TOKEN stands for it.
    const url = `http://agent-1:TOKEN@127.0.0.1:${g.proxyPort}`;
    expect(g.stderr()).not.toContain(TOKEN);
    expect(vars).toEqual({ HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url });
    // Only what curl and git read: no upper-case names, no NO_PROXY.
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      http_proxy: vars.http_proxy?.replace('TOKEN', TOKEN),
    };
    await run('curl', ['-sS', '-o', '/dev/null', `http://${allowed}/from-curl`], env);
    await run('git', ['ls-remote', `http://${allowed}/repo.git`], {
      ...env,
      GIT_TERMINAL_PROMPT: '0',
    });
    const journaled = (path: string) => readFileSync(journal, 'utf8').includes(path);
    await waitFor(() => journaled('/from-curl') && journaled('/repo.git/info/refs'));
    expect(up.seen.map((r) => r.url)).toEqual(
      expect.arrayContaining(['/from-curl', expect.stringMatching(/^\/repo\.git\/info\/refs/)]),
    );
    await g.kill('SIGTERM');
  });
});
