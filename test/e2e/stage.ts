import { request } from 'undici';
import { afterEach } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { AGENTS } from '../helpers/review-story.js';

/**
 * A journal folder and a workspace for a test that writes the journal before the gateway
 * starts, made at import so that tempDir's cleanup runs after the files; the gateway `start`
 * opens on them is stopped after each test.
 */
export function journalStage(): {
  dir: string;
  ws: string;
  start(config: Record<string, unknown>): Promise<TestGateway>;
} {
  const dir = tempDir();
  const ws = tempDir();
  let g: TestGateway | undefined;
  afterEach(async () => {
    await g?.stop();
    g = undefined;
  });
  return {
    dir,
    ws,
    start: async (config) => (g = await startTestGateway({ workspace: ws, ...config }, { dir })),
  };
}

/** The review page's URL on a gateway's admin listener. */
export const pageUrl = (g: TestGateway) => `http://127.0.0.1:${g.gw.admin.port}/`;

/**
 * One runner event through the bridge's ingest route (`POST /events`), as agent `i`; resolves
 * with the decision (a held one only when the session is resumed or denied).
 */
export async function ingest(
  g: TestGateway,
  i: number,
  event: { kind: string; target: string; method?: string; command?: string },
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`http://127.0.0.1:${g.gw.bridge.port}/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${AGENTS[i]!.token}`,
    },
    body: JSON.stringify(event),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}
