import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OutcomeRecord, TunnelRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { AGENT_TOKEN, gatewayPerTest } from '../helpers/gateway.js';
import { startSshGit } from '../helpers/sshd.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * Real OpenSSH and git through `trajgate connect` as ssh's ProxyCommand, with the agent's
 * credentials in https_proxy as `trajgate env` prints them: a clone works when the tunnel is
 * allowed, is refused with the gateway's reason on git's stderr when not, freezes while its
 * session is paused, and a deny ends it.
 */
const sshd = await startSshGit();
const stranger = await startUpstream();
const AGENT = 'agent-1';
const SSH_TARGET = `127.0.0.1:${sshd.port}`;

const { start } = gatewayPerTest({
  agents: [{ id: AGENT, token: AGENT_TOKEN }],
  network: { allow: [`ssh://${SSH_TARGET}`], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
});

const proxyOf = (g: TestGateway) => `http://${AGENT}:${AGENT_TOKEN}@127.0.0.1:${g.gw.proxy.port}`;

/** `git clone` of the server's repository into a new folder, through the gateway. */
function clone(g: TestGateway) {
  const into = join(tempDir('trajgate-clone-'), 'repo');
  const done = new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = execFile(
      'git',
      ['clone', '-q', sshd.repoUrl, into],
      { env: { ...sshd.gitEnv, https_proxy: proxyOf(g) }, encoding: 'utf8', timeout: 60_000 },
      (_err, _stdout, stderr) => resolve({ status: child.exitCode, stderr }),
    );
  });
  return { into, done };
}

/** Whether `done` settles within `ms`: for asserting that a frozen clone does not. */
const settlesWithin = (done: Promise<unknown>, ms: number) =>
  Promise.race([
    done.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
  ]);

const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');
const tunnels = (g: TestGateway) =>
  g.records().filter((r): r is TunnelRecord => r.type === 'tunnel');

/**
 * A clone whose tunnel reached the server, frozen by a pause before sshd said a word; then
 * sshd starts (`before`: how many had started until then).
 */
async function frozenClone(g: TestGateway) {
  sshd.closeGate();
  const before = sshd.accepted;
  const { into, done } = clone(g);
  await waitFor(() => sshd.accepted === before + 1, 20_000, 'the tunnel reached sshd');
  await pauseSession(g);
  await waitFor(() => tunnels(g).some((t) => t.change === 'frozen'), 20_000, 'frozen');
  sshd.openGate();
  return { into, done, before };
}

/** Two requests nothing allows: REVIEW, then PAUSE (blocked). */
async function pauseSession(g: TestGateway): Promise<void> {
  for (const path of ['/one', '/two'])
    expect(
      (await curl(['-x', g.proxyUrl, '-U', `${AGENT}:${AGENT_TOKEN}`, `${stranger.url}${path}`]))
        .status,
    ).toBe(403);
  expect(g.gw.sessions.isPaused(AGENT)).toBe(true);
}

describe('git over SSH through trajgate connect', () => {
  it('clones when network.allow names ssh://host:port; the tunnel is journaled as ssh', async () => {
    const g = await start();
    const { into, done } = clone(g);
    const r = await done;
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readFileSync(join(into, 'README'), 'utf8')).toBe(sshd.readme);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    const event = records.find((x) => x.type === 'event' && x.target === SSH_TARGET);
    expect(event).toMatchObject({ session: AGENT, verdict: 'ALLOW' });
    expect(outcomes(g)[0]).toMatchObject({ rid: event?.seq, status: 200, protocol: 'ssh' });
    expect(outcomes(g)[0]?.bytesDown).toBeGreaterThan(1000);
  });

  it('is refused with the reason on git stderr when nothing allows the host:port', async () => {
    const g = await start({ network: { allow: [], allowPrivate: ['127.0.0.1/32'] } });
    const { into, done } = clone(g);
    const r = await done;
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`trajgate connect: ${SSH_TARGET} through http://127.0.0.1:`);
    expect(r.stderr).toContain(
      `refused (403): trajgate refused this request: CONNECT ${SSH_TARGET}\nReason: port ${sshd.port} not allowed`,
    );
    expect(r.stderr).not.toContain(AGENT_TOKEN);
    expect(existsSync(join(into, 'README'))).toBe(false);
  });

  it('freezes while the session is paused; a resume completes the clone', async () => {
    const g = await start();
    const { into, done, before } = await frozenClone(g);
    await waitFor(() => sshd.started === before + 1, 20_000, 'sshd started');
    expect(await settlesWithin(done, 1_000)).toBe(false);
    g.gw.sessions.resume(AGENT, { reset: true });
    const r = await done;
    expect(r.status).toBe(0);
    expect(readFileSync(join(into, 'README'), 'utf8')).toBe(sshd.readme);
    expect(tunnels(g).map((t) => t.change)).toEqual(['frozen', 'thawed']);
  });

  it('a deny while paused ends the clone', async () => {
    const g = await start();
    const { into, done } = await frozenClone(g);
    g.gw.sessions.deny(AGENT);
    const r = await done;
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('Connection closed');
    expect(existsSync(join(into, 'README'))).toBe(false);
    expect(tunnels(g).at(-1)).toMatchObject({ change: 'closed', reason: 'denied by an operator' });
  });
});
