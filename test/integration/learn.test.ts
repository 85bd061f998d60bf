import { afterAll, describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import { startTestGateway } from '../helpers/gateway.js';
import { checkedConfig, learnPatch, replayedRequests, withPatch } from '../helpers/learn.js';
import { connectTunnel, roundTrip, startEchoServer } from '../helpers/raw.js';
import { ADMIN, AGENTS, auth } from '../helpers/review-story.js';
import { startUpstream } from '../helpers/upstream.js';
import { outcomeOf, waitForRecords } from '../helpers/wait.js';

/**
 * `trajgate learn` from a journal of real traffic: requests the allowlist let through, one a
 * deny pattern refused under the same folder, a REVIEW never approved, a POST refused and then
 * approved by an operator, and a blind SSH tunnel. The patch it proposes passes check-config
 * once merged, and replaying the journal's requests against it admits exactly what was
 * admitted live.
 */
const up = await startUpstream();
const tcp = await startEchoServer();
const U = up.url;
const T = `127.0.0.1:${tcp.port}`;
const AGENT = AGENTS[0]!;
const NETWORK = { allowPrivate: ['127.0.0.1/32'], ports: [80, 443, up.port, tcp.port] };
const g = await startTestGateway({
  agents: [AGENT],
  admin: { token: ADMIN },
  policy: { pause: 'block' },
  network: { ...NETWORK, allow: [`GET ${U}/v1/`, T], deny: [`GET ${U}/v1/items/raw`] },
});
const api = adminClient(g.gw.admin.port, ADMIN);
afterAll(() => g.stop());

const status = async (args: string[]) =>
  (await curl([...auth(0), '-x', g.proxyUrl, ...args])).status;
/** A refusal may pause the session (pause: block): start each step from zero. */
const reset = async () =>
  expect((await api.post(`/api/sessions/${AGENT.id}/resume`, { reset: true })).status).toBe(200);

expect(await status([`${U}/v1/items/1`])).toBe(200);
expect(await status([`${U}/v1/items/2`])).toBe(200);
expect(await status([`${U}/v1/items/raw`])).toBe(403);
await reset();
expect(await status([`${U}/v2/secret`])).toBe(403);
await reset();
expect(await status(['-d', 'a=1', `${U}/v1/items/1`])).toBe(403);
await reset();
const approved = await api.post(`/api/sessions/${AGENT.id}/approve`, {
  pattern: `POST ${U}/v1/items/`,
});
expect(approved.status).toBeLessThan(300);
expect(await status(['-d', 'a=2', `${U}/v1/items/1`])).toBe(200);
const tunnel = await connectTunnel(g.gw.proxy.port, T, {
  'Proxy-Authorization': `Basic ${Buffer.from(`${AGENT.id}:${AGENT.token}`).toString('base64')}`,
});
expect(tunnel.status).toBe(200);
const hello = 'SSH-2.0-learn_test\r\n';
expect((await roundTrip(tunnel.socket, hello, (got) => got === hello)).got).toBe(hello);
tunnel.socket.end();
const connect = g.records().find((r) => r.type === 'event' && r.target === T)!;
await waitForRecords(g, outcomeOf(connect.seq));
const records = g.records();

/** What replay must say of each request: the live gateway let it through, or not. */
const ADMITTED = [
  [`GET ${U}/v1/items/1`, true],
  [`GET ${U}/v1/items/2`, true],
  [`GET ${U}/v1/items/raw`, false],
  [`GET ${U}/v2/secret`, false],
  // Refused, then its pattern approved by an operator: ratified.
  [`POST ${U}/v1/items/1`, true],
  [`POST ${U}/v1/items/1`, true],
  [`CONNECT ${T}`, true],
] as const;

const EXPECTED = [
  `GET ${U}/v1/items/1`,
  `GET ${U}/v1/items/2`,
  `POST ${U}/v1/items/1`,
  `ssh://${T}`,
];

async function expectReplay(config: Record<string, unknown>) {
  const replayed = await replayedRequests(records, await checkedConfig(config));
  expect(replayed.map(([what, verdict]) => [what, verdict === 'ALLOW'])).toEqual(ADMITTED);
}

describe('trajgate learn from a journal of real traffic', () => {
  it('proposes network.allow entries that admit what was admitted and none of what was refused', async () => {
    const { text, patch } = await learnPatch(['--from', g.journalPath]);
    // /v1/items would admit the denied /v1/items/raw: the two items stay apart.
    expect(patch).toEqual({ network: { allow: EXPECTED } });
    expect(text).toContain('# 5 admitted (allowed or approved), 2 refused');
    expect(text).toMatch(
      /# 2 request\(s\), first \S+, last \S+; session\(s\) "agent-1"\n\s+- "POST /,
    );
    await expectReplay(withPatch({ agents: [AGENT], network: NETWORK }, patch));
  });

  it("with --agent, the same entries as that agent's allow", async () => {
    const { patch } = await learnPatch(['--from', g.journalPath, '--agent', AGENT.id]);
    expect(patch).toEqual({ agents: [{ id: AGENT.id, allow: EXPECTED }] });
    await expectReplay(withPatch({ agents: [{ ...AGENT }], network: NETWORK }, patch));
    const other = await learnPatch(['--from', g.journalPath, '--agent', AGENTS[1]!.id]);
    expect(other.patch).toEqual({ agents: [{ id: AGENTS[1]!.id, allow: [] }] });
  });

  it('--json gives the same proposal with counts', async () => {
    const { patch } = await learnPatch(['--from', g.journalPath, '--json']);
    expect(patch).toMatchObject({ scope: 'network.allow', admitted: 5, refused: 2, conflicts: [] });
    expect((patch.entries as { pattern: string }[]).map((e) => e.pattern)).toEqual(EXPECTED);
  });
});
