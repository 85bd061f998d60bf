import { request } from 'undici';
import type { TestGateway } from './gateway.js';
import { agentToken } from './ingest.js';
import { waitFor } from './wait.js';

/**
 * Pauses agent `id` (token: agentToken) by a write outside its workspace sent to ingest; that
 * request's client then leaves, so the session is paused with nothing held.
 */
export async function pauseByIngest(g: TestGateway, id = 'agent-1'): Promise<void> {
  const abort = new AbortController();
  const pausing = request(`http://127.0.0.1:${g.gw.bridge.port}/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${agentToken(id)}`,
    },
    body: JSON.stringify({ kind: 'write', target: '/etc/cron.d/x' }),
    signal: abort.signal,
  }).then(
    (r) => r.body.dump(),
    () => undefined,
  );
  await waitFor(() => g.gw.sessions.isPaused(id));
  if (g.gw.config.policy.pause === 'hold') {
    await waitFor(() => g.gw.sessions.held(id).length === 1);
    abort.abort();
    await waitFor(() => g.gw.sessions.held(id).length === 0);
  }
  await pausing;
}
