import { request } from 'undici';
import type { TestGateway } from './gateway.js';
import { startTestGateway } from './gateway.js';
import { tempDir } from './tmp.js';

export const agentToken = (id: string): string => `${id}-token-0123456789abcdef`;

/**
 * A gateway serving only the runner routes (no tool server) on `workspace`: one agent per id
 * (token: agentToken), holds of 1 s, `bridge` config keys from `bridgeConfig`; `bridge` is its
 * bridge's URL.
 */
export async function startIngestGateway(
  workspace: string,
  agents: readonly string[],
  bridgeConfig: Record<string, unknown> = {},
): Promise<{ g: TestGateway; bridge: string }> {
  const g = await startTestGateway(
    {
      workspace,
      agents: agents.map((id) => ({ id, token: agentToken(id) })),
      policy: { holdTimeout: '1s' },
      bridge: bridgeConfig,
    },
    { dir: tempDir() },
  );
  return { g, bridge: `http://127.0.0.1:${g.gw.bridge.port}` };
}

/**
 * POSTs a body (a string as is, else as JSON) to a runner route as agent `id` (null: without
 * a token); the status and the parsed JSON answer.
 */
export async function postAsAgent(
  url: string,
  id: string | null,
  body: unknown,
): Promise<{ status: number; json: Record<string, any> }> {
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(id === null ? {} : { authorization: `Bearer ${agentToken(id)}` }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headersTimeout: 30_000,
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, any> };
}
