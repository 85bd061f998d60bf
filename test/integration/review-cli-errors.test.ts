import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { refusingPort } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * Operator CLI errors say what to do: gateway not running, token refused, no token, usage.
 * The gateway has no admin.token, so its token is generated into its data folder; a config
 * naming the same journal lets the CLI find it there.
 */
const dir = tempDir();
const cwd = tempDir();
let g: TestGateway;
let config: string;

beforeAll(async () => {
  g = await startTestGateway({}, { dir });
  config = join(dir, 'cli.yaml');
  writeFileSync(config, stringify({ version: 1, workspace: dir, journal: g.journalPath }));
});
afterAll(() => g.stop());

const admin = () => `http://127.0.0.1:${g.gw.admin.port}`;
const noToken = { TRAJGATE_ADMIN_TOKEN: undefined };
const noStack = /\n\s+at /;

describe('operator CLI errors', () => {
  it('reads the generated token from the data folder named by --config', async () => {
    const r = await runCliAsync(['sessions', '--json', '--config', config, '--admin', admin()], {
      cwd,
      env: noToken,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ sessions: [] });
    const text = await runCliAsync(['sessions', '--config', config, '--admin', admin()], {
      cwd,
      env: noToken,
    });
    expect(text.stdout).toBe('no sessions yet\n');
  });

  it('not running (closed port) → exit 1, says so and how to point elsewhere', async () => {
    const port = await refusingPort();
    for (const cmd of [
      ['sessions'],
      ['events', 's'],
      ['approve', 's', 'p.example'],
      ['resume', 's'],
      ['deny', 's'],
    ]) {
      const r = await runCliAsync([...cmd, '--admin', `http://127.0.0.1:${port}`], {
        cwd,
        env: { TRAJGATE_ADMIN_TOKEN: 'some-token-0123456789' },
      });
      expect(r.status, cmd.join(' ')).toBe(1);
      expect(r.stderr).toContain(`cannot reach trajgate's admin API at http://127.0.0.1:${port}`);
      expect(r.stderr).toContain('ECONNREFUSED');
      expect(r.stderr).toContain('is `trajgate start` running?');
      expect(r.stderr).not.toMatch(noStack);
    }
  });

  it('wrong token → exit 1 saying the token was refused', async () => {
    const r = await runCliAsync(['sessions', '--admin', admin()], {
      cwd,
      env: { TRAJGATE_ADMIN_TOKEN: 'wrong-token-0123456789' },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /^trajgate: the admin API refused the token: set TRAJGATE_ADMIN_TOKEN/,
    );
    expect(r.stdout).toBe('');
  });

  it('no token anywhere → a usage error naming where it looked', async () => {
    // The embedded default's data folder: the XDG state folder, never the current one.
    const env = { ...noToken, TRAJGATE_DATA: undefined, XDG_STATE_HOME: join(cwd, 'state') };
    const r = await runCliAsync(['sessions', '--admin', admin()], { cwd, env });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no admin token: set TRAJGATE_ADMIN_TOKEN');
    expect(r.stderr).toContain(join(cwd, 'state', 'trajgate', 'admin-token'));
  });

  it.each([
    [['sessions', 'extra'], 'usage: trajgate sessions'],
    [['events'], 'usage: trajgate events SESSION'],
    [['approve', 'agent-1'], 'usage: trajgate approve SESSION PATTERN'],
    [['approve', 'a', 'b', 'c'], 'usage: trajgate approve SESSION PATTERN'],
    [['resume'], 'usage: trajgate resume SESSION'],
    [['deny', 'a', 'b'], 'usage: trajgate deny SESSION'],
  ])('usage error %j → exit 2', async (args, usage) => {
    const r = await runCliAsync([...args, '--admin', admin()], { cwd, env: noToken });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(usage);
    expect(r.stderr).not.toMatch(noStack);
  });

  it.each([
    [['sessions', '--bogus']],
    [['events', 's', '--limit']],
    [['resume', 's', '--reset=yes']],
  ])('a bad option %j → exit 2 with a one-line reason, no stack trace', async (args) => {
    const r = await runCliAsync([...args, '--admin', admin()], {
      cwd,
      env: { TRAJGATE_ADMIN_TOKEN: 'some-token-0123456789' },
    });
    // An option parseArgs rejects is a usage error: one line and exit 2, no stack trace.
    expect(r.stderr).not.toMatch(noStack);
    expect(r.status).toBe(2);
  });

  it('--admin pointing at something that is not the admin API (the proxy port) → exit 1, no stack', async () => {
    const r = await runCliAsync(['sessions', '--admin', `http://127.0.0.1:${g.gw.proxy.port}`], {
      cwd,
      env: { TRAJGATE_ADMIN_TOKEN: 'some-token-0123456789' },
    });
    // A URL that is not the admin API (here the proxy) is named as such: exit 1, no stack trace.
    expect(r.stderr).not.toMatch(noStack);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^trajgate: /);
  });
});
