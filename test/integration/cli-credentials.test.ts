import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { generatedSentinel } from '../../src/event/sentinels.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { runCliAsync } from '../helpers/cli.js';
import { startChild, startPorted, writeConfig } from '../helpers/child-gateway.js';
import { readRecords } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The operator's side of credentials against a real gateway in a child process: `trajgate env
 * AGENT` prints the sentinels given to AGENT (never a value), `trajgate credentials` lists them
 * and revokes or restores one over the admin API, journaled, kept across a kill -9 and a
 * rotation's snapshot.
 */
const ADMIN = 'credentials-admin-token-0123456789';
const VALUES = {
  GH_VALUE: 'github-real-value-0123456789abcdef',
  NPM_VALUE: 'npm-real-value-0123456789abcdef',
  X_VALUE: 'x-real-value-0123456789abcdef',
};
const NPM_SENTINEL = 'tgs_npm_0123456789abcdef';

const ported = await startPorted(
  {
    admin: { token: ADMIN },
    agents: [
      { id: 'agent-1', token: 'agent-1-token-0123456789abcdef', roles: ['builder'] },
      { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
    ],
    roles: { builder: { allow: [] } },
    credentials: [
      { name: 'github', value: '${GH_VALUE}', hosts: ['api.github.com'], scheme: 'Bearer' },
      {
        name: 'npm-reg',
        value: '${NPM_VALUE}',
        hosts: ['registry.npmjs.org'],
        roles: ['builder'],
        sentinel: NPM_SENTINEL,
        query: 'token',
      },
      {
        name: 'only-two',
        value: '${X_VALUE}',
        hosts: ['x.example'],
        agents: ['agent-2'],
        env: 'MY_X',
      },
    ],
    // Rotations early: a snapshot must carry a revoke the file it replaces held.
    journal: { path: 'journal.jsonl', rotate: 4096, keep: 100 },
  },
  VALUES,
);
const { config, gatewayConfig } = ported;
const journal = join(dirname(config), 'journal.jsonl');

/** The operator's shell holds no credential value: those variables are unset here. */
const operatorEnv = { GH_VALUE: undefined, NPM_VALUE: undefined, X_VALUE: undefined };
const cli = (args: string[], admin?: number) =>
  runCliAsync(
    [...args, '--config', config, ...(admin ? ['--admin', `http://127.0.0.1:${admin}`] : [])],
    { env: { ...operatorEnv, TRAJGATE_ADMIN_TOKEN: ADMIN } },
  );

const noValue = (text: string) => {
  for (const v of Object.values(VALUES)) expect(text).not.toContain(v);
};

const key = () => Buffer.from(readFileSync(join(dirname(config), 'credential-key'), 'utf8').trim());
const credentialRecords = (path = journal) =>
  readRecords(path).filter(
    (r): r is Extract<JournalRecord, { type: 'credential' }> => r.type === 'credential',
  );

/** A config of `credentials` alone, its journal in a new folder (no gateway ever ran there). */
function configOf(credentials: object[]): { dir: string; file: string } {
  const dir = tempDir();
  const file = writeConfig(dir, {
    version: 1,
    workspace: tempDir('trajgate-ws-'),
    journal: join(dir, 'journal.jsonl'),
    credentials,
  });
  return { dir, file };
}

describe('trajgate env AGENT: the sentinels given to the agent', () => {
  it('prints those of its agents and roles, generated or fixed, and no value', async () => {
    const github = generatedSentinel(key(), 'github');
    const one = await cli(['env', 'agent-1']);
    expect(one.status, one.stderr).toBe(0);
    expect(one.stdout).toContain(`\nexport GITHUB_TOKEN='${github}'\n`);
    expect(one.stdout).toMatch(new RegExp(`\\nexport NPM_REG_TOKEN='${NPM_SENTINEL}'$`, 'm'));
    expect(one.stdout).not.toContain('MY_X');
    expect(one.stdout).not.toContain('tgs_only_two');
    noValue(one.stdout + one.stderr);

    const two = await cli(['env', 'agent-2', '--json']);
    expect(two.status, two.stderr).toBe(0);
    const vars = JSON.parse(two.stdout) as Record<string, string>;
    expect(vars.GITHUB_TOKEN).toBe(github);
    expect(vars.MY_X).toBe(generatedSentinel(key(), 'only-two'));
    expect(vars.NPM_REG_TOKEN).toBeUndefined();
    noValue(two.stdout + two.stderr);
  });

  it('a generated sentinel needs the key a start made: without it, an error and no key made', async () => {
    const { dir, file } = configOf([
      { name: 'github', value: '${GH_VALUE}', hosts: ['api.github.com'] },
    ]);
    const r = await runCliAsync(['env', '--config', file], { env: operatorEnv });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${join(dir, 'credential-key')}: no credential key yet`);
    expect(r.stderr).toContain('start the gateway once');
    expect(r.stdout).toBe('');
    expect(existsSync(join(dir, 'credential-key'))).toBe(false);
  });

  it('an env that names a variable trajgate prints itself is refused, naming the key', async () => {
    const { file } = configOf([
      { name: 'gh', value: '${GH_VALUE}', hosts: ['a.example'], sentinel: NPM_SENTINEL },
      {
        name: 'npm',
        value: '${GH_VALUE}',
        hosts: ['b.example'],
        sentinel: 'tgs_other_0123456789abcdef',
        env: 'HTTPS_PROXY',
      },
    ]);
    const r = await runCliAsync(['env', '--config', file], { env: operatorEnv });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('credentials[1].env is HTTPS_PROXY, a variable trajgate env prints');
  });
});

describe('trajgate credentials: list, revoke, restore', () => {
  it('lists every credential without a value', async () => {
    const r = await cli(['credentials']);
    expect(r.status, r.stderr).toBe(0);
    const [head, ...rows] = r.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^NAME +HOSTS +ENV +SENTINEL +GIVEN TO +STATE$/);
    expect(rows[0]).toMatch(
      /^github +api\.github\.com +GITHUB_TOKEN +tgs_github_\w+ +every agent +active$/,
    );
    expect(rows[1]).toMatch(
      new RegExp(
        `^npm-reg +registry\\.npmjs\\.org +NPM_REG_TOKEN +${NPM_SENTINEL} +role builder +active$`,
      ),
    );
    expect(rows[2]).toMatch(/^only-two +x\.example +MY_X +tgs_only_two_\w+ +agent-2 +active$/);
    noValue(r.stdout + r.stderr);
  });

  it('revoke journals a credential record first; again changes nothing; restore undoes it', async () => {
    const revoked = await cli(['credentials', 'revoke', 'github']);
    expect(revoked.status, revoked.stderr).toBe(0);
    expect(revoked.stdout).toBe(
      'revoked credential github: requests carrying its sentinel are refused\n',
    );
    expect(credentialRecords()).toEqual([
      expect.objectContaining({
        type: 'credential',
        name: 'github',
        action: 'revoke',
        by: 'operator',
      }),
    ]);
    const listed = await cli(['credentials', '--json']);
    const { credentials } = JSON.parse(listed.stdout) as {
      credentials: { name: string; revoked: boolean; place: string }[];
    };
    expect(credentials.map((c) => [c.name, c.revoked, c.place])).toEqual([
      ['github', true, 'header Authorization (Bearer)'],
      ['npm-reg', false, 'query token'],
      ['only-two', false, 'header Authorization'],
    ]);
    noValue(listed.stdout);

    const again = await cli(['credentials', 'revoke', 'github']);
    expect(again.stdout).toBe('credential github was already revoked; nothing changed\n');
    expect(credentialRecords()).toHaveLength(1);

    const restored = await cli(['credentials', 'restore', 'github', '--json']);
    expect(JSON.parse(restored.stdout)).toMatchObject({
      changed: true,
      closed: 0,
      credential: { name: 'github', revoked: false },
    });
    expect(credentialRecords().map((r) => r.action)).toEqual(['revoke', 'restore']);
  });

  it('an unknown name is 404 naming the configured ones; a bad verb a usage error', async () => {
    const r = await cli(['credentials', 'revoke', 'gitlab']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'POST /api/credentials/gitlab/revoke: 404 no credential "gitlab" (credentials: github, npm-reg, only-two)',
    );
    const res = await request(
      `http://127.0.0.1:${ported.adminPort}/api/credentials/gitlab/restore`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: '{}',
      },
    );
    expect(res.statusCode).toBe(404);
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe(
      'E_UNKNOWN_CREDENTIAL',
    );
    const unauth = await request(`http://127.0.0.1:${ported.adminPort}/api/credentials`);
    expect(unauth.statusCode).toBe(401);
    await unauth.body.dump();
    const bad = await cli(['credentials', 'forget', 'github']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('usage: trajgate credentials [--json]');
    expect(credentialRecords()).toHaveLength(2);
  });

  it('a revoke outlives kill -9, and a rotation whose snapshot replaces the file that held it', async () => {
    expect((await cli(['credentials', 'revoke', 'npm-reg'])).status).toBe(0);
    // Restore and revoke only-two until the journal rotates: npm-reg's record is then in a
    // rotated file, and the live file starts with a snapshot.
    const post = (verb: string) =>
      request(`http://127.0.0.1:${ported.adminPort}/api/credentials/only-two/${verb}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: '{}',
      }).then((res) => res.body.json());
    const rotated = () =>
      readdirSync(dirname(journal)).some((f) => /^journal\.\d+\.jsonl$/.test(f));
    for (let i = 0; i < 60 && !rotated(); i++) {
      await post('revoke');
      await post('restore');
    }
    await waitFor(() => readRecords(journal)[0]?.type === 'snapshot', 10_000, 'a snapshot');
    const head = readRecords(journal)[0] as { state: { revokedCredentials?: string[] } };
    // As of the old file's last record: only-two may be mid-pair there.
    expect(head.state.revokedCredentials).toContain('npm-reg');
    expect(head.state.revokedCredentials).not.toContain('github');
    expect(credentialRecords().some((r) => r.name === 'npm-reg')).toBe(false);

    await ported.gateway.kill('SIGKILL');
    const again = await startChild(gatewayConfig, 20_000, VALUES);
    const r = await cli(['credentials', '--json'], again.adminPort);
    expect(r.status, r.stderr).toBe(0);
    const { credentials } = JSON.parse(r.stdout) as {
      credentials: { name: string; revoked: boolean }[];
    };
    expect(credentials.map((c) => [c.name, c.revoked])).toEqual([
      ['github', false],
      ['npm-reg', true],
      ['only-two', false],
    ]);
    await again.kill('SIGTERM');
  }, 60_000);
});
