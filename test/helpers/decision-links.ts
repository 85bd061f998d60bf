import { request } from 'undici';
import { expect } from 'vitest';
import type { AdminClient } from './admin.js';
import { viaProxy } from './admin.js';
import type { TestGateway } from './gateway.js';
import { oneAgentStage } from './review-story.js';
import { tempDir } from './tmp.js';
import { startWebhook } from './webhook.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { waitFor } from './wait.js';

/** The decision links of a pause notification. */
export interface Links {
  approveOnce: string;
  approvePattern: string;
  approveReset: string;
  deny: string;
  suggestion: { pattern: string; kind: string };
  expiresAt: string;
}

/**
 * The decision-link tests' stage (one agent, a webhook per pause); `paused` makes a REVIEW,
 * then a PAUSE holding GET /v1/x, and returns the notification's links.
 */
export async function decisionStage() {
  const stage = await oneAgentStage();
  const { other, auth, start } = stage;
  async function paused(holdTimeout = '30s', dir = tempDir(), notify: object = {}) {
    const hook = await startWebhook();
    const config = { policy: { holdTimeout }, notify: { webhook: hook.url, ...notify } };
    const [g, api] = await start(config, dir);
    expect((await viaProxy(g.proxyUrl, `${other.url}/v1/a`, auth)).status).toBe(403);
    const held = viaProxy(g.proxyUrl, `${other.url}/v1/x`, auth);
    await waitFor(async () => (await api.get('/api/sessions/agent-1')).json.held === 1);
    await waitFor(async () => hook.deliveries.length === 1);
    const links = hook.deliveries[0]!.body.links as Links;
    return { g, api, held, links, config, dir, hook };
  }
  return { ...stage, paused };
}

/** A link followed as a person (HTML) or a script (JSON) would, with no admin token. */
export async function follow(url: string, method = 'GET', html = false) {
  const res = await request(url, {
    method: method as 'GET',
    headers: html ? { accept: 'text/html' } : { accept: 'application/json' },
    ...(method === 'POST' ? { body: '' } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: safeJson(text) };
}

const safeJson = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};

export const ofType = <T extends JournalRecord['type']>(g: TestGateway, type: T) =>
  g.records().filter((r) => r.type === type) as Extract<JournalRecord, { type: T }>[];

export async function state(api: AdminClient): Promise<string> {
  return (await api.get('/api/sessions/agent-1')).json.state;
}
