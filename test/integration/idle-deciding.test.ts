import { afterAll, describe, expect, it } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { EventRecord, EvictRecord, JournalRecord } from '../../src/journal/records.js';
import { agentAuth, viaProxy } from '../helpers/admin.js';
import { startTestGateway } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { startUpstream } from '../helpers/upstream.js';
import { outcomeOf, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * A request whose name is still being resolved is neither a flow nor held, yet its session is
 * busy: with `policy.sessionIdle: 1s` and a resolver that answers only when the test says, the
 * session stays while its decision waits (an idle one beside it is evicted meanwhile), and is
 * evicted once the decision came to its outcome and the session idled.
 */
const up = await startUpstream();
const HOST = 'stalled.test';
let asked = false;
let answer: () => void = () => undefined;
const answered = new Promise<void>((resolve) => (answer = resolve));
const lookup: Lookup = async (host) => {
  if (host !== HOST) throw new Error(`no such name in this test: ${host}`);
  asked = true;
  await answered;
  return ['127.0.0.1'];
};
const AGENTS = ['slow', 'quiet'];
const g = await startTestGateway(
  {
    agents: AGENTS.map((id) => ({ id, token: agentToken(id) })),
    policy: { sessionIdle: '1s' },
    // The lookup's own deadline: far past what the test waits for.
    limits: { connectTimeout: '120s' },
    network: {
      allow: [`${HOST}:${up.port}`, `127.0.0.1:${up.port}`],
      allowPrivate: ['127.0.0.1/32'],
    },
  },
  { lookup },
);
afterAll(async () => {
  answer();
  await g.stop();
});

const isEvict = (r: JournalRecord): r is EvictRecord => r.type === 'evict';
const eventOf = (session: string, target: string) => (r: JournalRecord) =>
  r.type === 'event' && r.session === session && r.target.includes(target);
const get = (id: string, url: string) => viaProxy(g.proxyUrl, url, agentAuth(id, agentToken(id)));

describe('eviction and a decision waiting on DNS', () => {
  it('keeps the session while its lookup stalls; evicts it once the request ended and it idled', async () => {
    // `slow` is seen first, so every sweep looks at it before `quiet`.
    expect((await get('slow', `http://127.0.0.1:${up.port}/first`)).status).toBe(200);
    expect((await get('quiet', `http://127.0.0.1:${up.port}/only`)).status).toBe(200);
    const late = get('slow', `http://${HOST}:${up.port}/late`);
    await waitFor(() => asked, 20_000, 'the stalled lookup to be asked');

    // Idle longer than `slow` was before its lookup began, `quiet` goes: that sweep looked at
    // `slow` first, past sessionIdle too, and kept it.
    const records = await waitForRecords(g, isEvict);
    expect(records.filter(isEvict).map((r) => r.session)).toEqual(['quiet']);
    expect(records.some(eventOf('slow', HOST))).toBe(false);

    answer();
    expect((await late).status).toBe(200);
    const event = (await waitForRecords(g, eventOf('slow', HOST))).find(eventOf('slow', HOST));
    const done = await waitForRecords(g, outcomeOf((event as EventRecord).seq));
    const outcome = done.find(outcomeOf((event as EventRecord).seq)) as JournalRecord;
    const after = await waitForRecords(g, isEvict, 2);
    const evicts = after.filter(isEvict);
    expect(evicts.map((r) => r.session)).toEqual(['quiet', 'slow']);
    // Evicted after its request's outcome, idle since that request's event.
    expect(evicts[1]!.seq).toBeGreaterThan(outcome.seq);
    expect(evicts[1]!.idleSince).toBe((event as EventRecord).ts);
    expect(Date.parse(evicts[1]!.ts) - Date.parse(evicts[1]!.idleSince)).toBeGreaterThanOrEqual(
      1_000,
    );
  });
});
