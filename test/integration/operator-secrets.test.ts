import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentAuth, viaProxy } from '../helpers/admin.js';
import type { RunResult } from '../helpers/cli.js';
import { runCliAsync } from '../helpers/cli.js';
import { startPorted, writeConfig } from '../helpers/child-gateway.js';
import { startRedis } from '../helpers/redis.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * Every agent token, the admin token and the notify secrets are `${VAR}`s,
 * set where the gateway runs and unset in the operator's shell. Each operator command, through
 * the built CLI against the running gateway, needs the admin token at most; `start` and
 * `check-config` still refuse, naming every unset variable. No stand-in is ever printed.
 */
const SECRETS = {
  AGENT_1_TOKEN: 'agent-1-token-0123456789abcdef',
  AGENT_2_TOKEN: 'agent-2-token-fedcba9876543210',
  NOTIFY_SECRET: 'notify-secret-0123456789abcdef',
  OPS_TOKEN: 'operator-token-0123456789abcdef',
};
/** The operator's shell: none of the secrets but the admin token's variable. */
const OPERATOR = {
  AGENT_1_TOKEN: undefined,
  AGENT_2_TOKEN: undefined,
  NOTIFY_SECRET: undefined,
  NOTIFY_WEBHOOK: undefined,
  TRAJGATE_ADMIN_TOKEN: undefined,
  OPS_TOKEN: SECRETS.OPS_TOKEN,
};

const other = await startUpstream();
const hook = await startWebhook();
const ca = makeLocalCa();
const { config, journal, workspace, keys, gateway } = await startPorted(
  {
    agents: [
      { id: 'agent-1', token: '${AGENT_1_TOKEN}' },
      { id: 'agent-2', token: '${AGENT_2_TOKEN}' },
    ],
    admin: { token: '${OPS_TOKEN}' },
    notify: { webhook: '${NOTIFY_WEBHOOK}', secret: '${NOTIFY_SECRET}' },
    network: { allowPrivate: ['127.0.0.0/8'] },
    policy: { pause: 'block' },
    tls: { ca: ca.dir },
  },
  { ...SECRETS, NOTIFY_WEBHOOK: hook.url },
);

const outputs: RunResult[] = [];
/** The built CLI in the operator's shell (`env` over it); every output is kept for the end. */
async function op(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const r = await runCliAsync(args, { env: { ...OPERATOR, ...env }, timeoutMs: 30_000 });
  outputs.push(r);
  return r;
}
const ok = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> => {
  const r = await op([...args, '--config', config], env);
  expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r;
};

/** agent-1 crosses the network boundary twice: REVIEW, then PAUSE (policy.pause: block). */
async function pauseAgent1(tag: string): Promise<void> {
  const auth = agentAuth('agent-1', SECRETS.AGENT_1_TOKEN);
  for (const n of [1, 2])
    expect((await viaProxy(gateway.proxyUrl, `${other.url}/${tag}-${n}`, auth)).status).toBe(403);
}

describe('operator commands with the agents’ and notify secrets unset', () => {
  it('sessions, events, approve, revoke, deny-pattern, resume, deny and reload work against the gateway', async () => {
    await pauseAgent1('first');
    expect((await ok(['sessions'])).stdout).toMatch(/\nagent-1 +PAUSED \(network\)/);
    expect((await ok(['events', 'agent-1'])).stdout).toContain(`${other.url}/first-2`);
    const approved = await ok(['approve', 'agent-1', `GET ${other.url}/approved/`]);
    const id = /\(id (a\d+)/.exec(approved.stdout)?.[1] as string;
    expect(id).toMatch(/^a\d+$/);
    await ok(['revoke', id]);
    await ok(['deny-pattern', `POST ${other.url}/`, '--session', 'agent-1']);
    expect((await ok(['resume', 'agent-1', '--reset'])).stdout).toContain('agent-1');
    await pauseAgent1('again');
    expect((await ok(['deny', 'agent-1'])).stdout).toContain('denied agent-1');
    expect(JSON.parse((await ok(['reload', '--json'])).stdout)).toMatchObject({ reloaded: true });
    // The gateway itself has every secret: its pause notifications were sent and signed.
    await waitFor(() => hook.deliveries.length >= 2, 10_000, 'two pause notifications');
    expect(hook.deliveries[0]?.headers['x-trajgate-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('export, replay, verify, ca show and check (the agent’s own token only) work too', async () => {
    const har = join(tempDir(), 'agent-1.har');
    await ok(['export', '--session', 'agent-1', '--har', har]);
    expect(existsSync(har)).toBe(true);
    expect((await ok(['replay', journal])).stdout).toMatch(/^REVIEW: network\nPAUSE: network\n/);
    expect((await ok(['verify'])).stdout).toMatch(/^ok: \d+ records, chain intact/);
    expect((await ok(['ca', 'show'])).stdout).toContain(ca.certPath);
    const check = await ok(['check', '--kind', 'read', '--target', join(workspace, 'a.txt')], {
      // agent-1 was left paused: agent-2 asks.
      TRAJGATE_AGENT_TOKEN: SECRETS.AGENT_2_TOKEN,
    });
    expect(check.stderr).toBe('');
  });

  it('env for one agent needs that agent’s variable only', async () => {
    const r = await ok(['env', 'agent-2'], { AGENT_2_TOKEN: SECRETS.AGENT_2_TOKEN });
    expect(r.stdout).toContain(`export TRAJGATE_AGENT_TOKEN='${SECRETS.AGENT_2_TOKEN}'\n`);
    expect(r.stderr).toBe('');
  });

  it('state rebuild needs the store’s URL, not the agents’ secrets', async () => {
    const redis = await startRedis();
    const rebuild = writeConfig(tempDir(), {
      ...keys,
      state: { store: 'redis', redis: { url: '${REDIS_URL}' } },
    });
    const args = ['state', 'rebuild', '--from', journal, '--config', rebuild];
    const unset = await op(args);
    expect(unset.status).toBe(1);
    expect(unset.stderr).toMatch(
      new RegExp(
        `^trajgate: ${rebuild}: this command needs state\\.redis\\.url\n  ${rebuild}:\\d+:\\d+: state\\.redis\\.url: environment variable REDIS_URL is not set\n$`,
      ),
    );
    const r = await op(args, { REDIS_URL: redis.url });
    expect(r.status, r.stderr).toBe(0);
    expect(await redis.client().keys('*')).not.toEqual([]);
  });

  it('the admin token unset: the command says which variable, TRAJGATE_ADMIN_TOKEN stands in', async () => {
    const r = await op(['sessions', '--config', config], { OPS_TOKEN: undefined });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^trajgate: ${config}: this command needs admin\\.token \\(or set TRAJGATE_ADMIN_TOKEN to it\\)\n  ${config}:\\d+:\\d+: admin\\.token: environment variable OPS_TOKEN is not set\n$`,
      ),
    );
    await ok(['sessions'], { OPS_TOKEN: undefined, TRAJGATE_ADMIN_TOKEN: SECRETS.OPS_TOKEN });
  });

  it('start and check-config still refuse, naming every unset variable', async () => {
    for (const args of [
      ['start', '--config', config],
      ['check-config', config],
    ]) {
      const r = await op(args);
      expect(r.status, args[0]).toBe(1);
      for (const name of ['AGENT_1_TOKEN', 'AGENT_2_TOKEN', 'NOTIFY_WEBHOOK', 'NOTIFY_SECRET'])
        expect(r.stderr, `${args[0]} ${name}`).toMatch(
          new RegExp(`${config}:\\d+:\\d+: \\S+: environment variable ${name} is not set`),
        );
    }
  });

  it('no stand-in was ever printed', () => {
    expect(outputs.length).toBeGreaterThan(15);
    for (const r of outputs)
      expect(r.stdout + r.stderr).not.toMatch(/placeholder|unset\.invalid|unset-/);
  });
});
