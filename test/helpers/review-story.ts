import { expect } from 'vitest';
import type { AdminClient } from './admin.js';
import { adminClient, agentAuth, viaProxy } from './admin.js';
import type { TestGateway } from './gateway.js';
import { gatewayPerTest } from './gateway.js';
import type { Upstream } from './upstream.js';
import { startUpstream } from './upstream.js';
import { waitFor } from './wait.js';

export const ADMIN = 'operator-admin-token-0123456789';
export const ALICE = 'alice-admin-token-0123456789ab';
export const AGENTS = [
  { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' },
  { id: 'agent-2', token: 'agent-2-token-0123456789abcdef' },
];
export const auth = (i: number) => agentAuth(AGENTS[i]!.id, AGENTS[i]!.token);

/**
 * The review tests' stage: two agents, an allowlisted upstream (`allowed`) and one that is not
 * (`other`), admin tokens for `operator` and `alice`; each test's gateway is stopped after it.
 */
export async function reviewStage(): Promise<{
  allowed: Upstream;
  other: Upstream;
  start(extra?: Record<string, unknown>): Promise<[TestGateway, AdminClient]>;
  pause(
    g: TestGateway,
    api: AdminClient,
    i: number,
    held?: number,
  ): Promise<{ held: ReturnType<typeof viaProxy> }>;
}> {
  const allowed = await startUpstream();
  const other = await startUpstream();
  const gateways = gatewayPerTest({
    agents: AGENTS,
    policy: { holdTimeout: '20s' },
    network: { allow: [`127.0.0.1:${allowed.port}`], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN, tokens: [{ name: 'alice', token: ALICE }] },
  });
  return {
    allowed,
    other,
    async start(extra = {}) {
      const g = await gateways.start(extra);
      return [g, adminClient(g.gw.admin.port, ADMIN)];
    },
    /** REVIEW, then a second unapproved request that is held; waits (via the API) until it is. */
    async pause(g, api, i, held = 1) {
      const review = await viaProxy(g.proxyUrl, `${other.url}/first-${i}`, auth(i));
      expect(review.status).toBe(403);
      const second = viaProxy(g.proxyUrl, `${other.url}/second-${i}`, auth(i));
      const id = AGENTS[i]!.id;
      await waitFor(async () => (await api.get(`/api/sessions/${id}`)).json.held === held);
      return { held: second };
    },
  };
}

/**
 * The one-agent stage: `agent-1` (`auth` its proxy credentials) and an upstream it is not
 * allowed (`other`); `start` runs a gateway with the admin token ADMIN and loopback addresses
 * allowed, `config`'s keys over those, on `dir` when given (a restart: the same journal). Each
 * test's gateway is stopped after it, unless the test said it `stopped` it itself.
 */
export async function oneAgentStage(): Promise<{
  other: Upstream;
  auth: string[];
  start(config?: Record<string, unknown>, dir?: string): Promise<[TestGateway, AdminClient]>;
  stopped(): void;
}> {
  const other = await startUpstream();
  const gateways = gatewayPerTest({
    agents: [AGENTS[0]],
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  });
  return {
    other,
    auth: auth(0),
    async start(config = {}, dir) {
      const g = await gateways.start(config, dir === undefined ? {} : { dir });
      return [g, adminClient(g.gw.admin.port, ADMIN)];
    },
    stopped: () => gateways.stopped(),
  };
}
