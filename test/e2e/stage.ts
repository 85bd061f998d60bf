import { request } from 'undici';
import type { TestGateway } from '../helpers/gateway.js';
import { AGENTS } from '../helpers/review-story.js';

/** The review page's URL on a gateway's admin listener. */
export const pageUrl = (g: TestGateway) => `http://127.0.0.1:${g.gw.admin.port}/`;

/**
 * One runner event through the bridge's ingest route (`POST /events`), as agent `i`; resolves
 * with the decision (a held one only when the session is resumed or denied).
 */
export async function ingest(
  g: TestGateway,
  i: number,
  event: { kind: string; target: string; method?: string },
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
