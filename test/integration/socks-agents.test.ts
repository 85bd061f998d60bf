import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, RefusalRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { AGENT_TOKEN, gatewayPerTest } from '../helpers/gateway.js';
import { SOCKS_CONNECT, SOCKS_LISTEN, socksAt } from '../helpers/socks.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitForRecords } from '../helpers/wait.js';

/**
 * Who a SOCKS5 client is (RFC 1929 username/password: the agent id and token), and what an
 * OpenSSH client hears when its tunnel is refused: real curl and ssh on loopback.
 */
const upstream = await startUpstream();
const UPSTREAM = `127.0.0.1:${upstream.port}`;
const { start } = gatewayPerTest({
  listen: SOCKS_LISTEN,
  network: { allow: [UPSTREAM], allowPrivate: ['127.0.0.1/32'] },
});
const AGENTS = { agents: [{ id: 'agent-1', token: AGENT_TOKEN }] };
const refusals = (records: JournalRecord[]) =>
  records.filter((r): r is RefusalRecord => r.type === 'refusal');

/** Runs the real ssh through the SOCKS listener; resolves with its exit code and stderr. */
function ssh(socksPort: number, target: string, creds: string[] = []) {
  const proxy = [process.execPath, SOCKS_CONNECT, String(socksPort), '%h', '%p', ...creds];
  return new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      'ssh',
      [
        '-o',
        'BatchMode=yes',
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        `ProxyCommand=${proxy.join(' ')}`,
        target,
        'true',
      ],
      { timeout: 30_000 },
      (err, _out, stderr) =>
        resolve({ code: err ? Number(err.code ?? 1) : 0, stderr: String(stderr) }),
    );
  });
}

describe('SOCKS5 to an ssh client', () => {
  it('a refused tunnel to port 22 reaches OpenSSH as a disconnect carrying the reason', async () => {
    const g = await start();
    const r = await ssh(g.gw.socks?.port ?? 0, 'git@git.example.test');
    expect(r.code).toBe(255);
    expect(r.stderr).toContain('Received disconnect');
    expect(r.stderr).toContain('trajgate refused this request: CONNECT git.example.test:22');
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    expect(records.find((x) => x.type === 'event')).toMatchObject({
      target: 'git.example.test:22',
      verdict: 'REVIEW',
    });
  });
});

describe('SOCKS5 with agents: username/password is the agent id and token', () => {
  it('curl -U agent:token is its agent; the tunnel is judged in its session', async () => {
    const g = await start(AGENTS);
    const r = await curl([
      '--socks5-hostname',
      socksAt(g),
      '--proxy-user',
      `agent-1:${AGENT_TOKEN}`,
      `http://${UPSTREAM}/agent`,
    ]);
    expect(r.status).toBe(200);
    const records = await waitForRecords(g, (x) => x.type === 'outcome');
    expect(records.find((x) => x.type === 'event')).toMatchObject({
      session: 'agent-1',
      verdict: 'ALLOW',
    });
  });

  it('no credentials: "no acceptable methods", journaled 407, nothing sent', async () => {
    const g = await start(AGENTS);
    const r = await curl(['--socks5-hostname', socksAt(g), `http://${UPSTREAM}/never`]);
    expect(r.exitCode).toBe(97);
    expect(r.stderr).toMatch(/No authentication method was acceptable|acceptable/i);
    const records = await waitForRecords(g, (x) => x.type === 'refusal');
    expect(refusals(records)[0]).toMatchObject({ status: 407, via: 'socks', client: '127.0.0.1' });
    expect(upstream.seen.some((q) => q.url === '/never')).toBe(false);
  });

  it('a wrong token is refused (RFC 1929 status 1) and journaled, the token never written', async () => {
    const g = await start(AGENTS);
    const wrong = 'wrong-token-0123456789abcdef';
    const r = await curl([
      '--socks5-hostname',
      socksAt(g),
      '--proxy-user',
      `agent-1:${wrong}`,
      `http://${UPSTREAM}/`,
    ]);
    expect(r.exitCode).toBe(97);
    const records = await waitForRecords(g, (x) => x.type === 'refusal');
    expect(refusals(records)[0]).toMatchObject({ status: 407, reason: 'wrong agent id or token' });
    expect(JSON.stringify(records)).not.toContain(wrong);
  });

  it("OpenSSH with the agent's credentials hears the reason of its refusal", async () => {
    const g = await start(AGENTS);
    const r = await ssh(g.gw.socks?.port ?? 0, 'git@git.example.test', ['agent-1', AGENT_TOKEN]);
    expect(r.stderr).toContain('trajgate refused this request: CONNECT git.example.test:22');
    const records = await waitForRecords(g, (x) => x.type === 'event');
    expect(records.find((x) => x.type === 'event')).toMatchObject({ session: 'agent-1' });
  });
});
