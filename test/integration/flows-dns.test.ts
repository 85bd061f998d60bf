import { describe, expect, it } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { AdminClient } from '../helpers/admin.js';
import type { FileGateway } from '../helpers/file-gateway.js';
import { fileGateway } from '../helpers/file-gateway.js';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import { eventsOf, replayVerdicts } from '../helpers/flows.js';
import { readRecords } from '../helpers/gateway.js';
import { connectTunnel } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * A decision is taken again at the moment of effect. The name `slow.test`
 * resolves (to 127.0.0.1) only when the test lets it; meanwhile an operator adds a deny,
 * revokes the approval that allowed it, or reloads a config without its allow entry. The
 * request is then refused with its verdict, never reaches the upstream, its one event record
 * says why, and `trajgate replay` of the journal decides what happened live. Loopback only.
 */
const up = await startUpstream();
const NAME = 'slow.test';
const TARGET = `${NAME}:${up.port}`;
const ADMIN = 'admin-token-for-dns-0123456789ab';
const SESSION = '127.0.0.1';

/** A resolver that answers for NAME only once released, and says when it was asked. */
function slowLookup() {
  let asked!: () => void;
  let answer: ((addresses: string[]) => void) | undefined;
  const wasAsked = new Promise<void>((r) => (asked = r));
  const lookup: Lookup = (host) => {
    if (host !== NAME) return Promise.reject(new Error(`no test address for ${host}`));
    return new Promise((resolve) => {
      answer = resolve;
      asked();
    });
  };
  return { lookup, wasAsked, release: () => answer?.(['127.0.0.1']) };
}

interface DnsGateway extends FileGateway {
  readonly admin: AdminClient;
  readonly lookup: ReturnType<typeof slowLookup>;
}

const network = (allow: string[]) => ({ network: { allow, allowPrivate: ['127.0.0.1/32'] } });

/** A gateway started from a config file (so it can reload it) that resolves through slowLookup. */
async function dnsGateway(allow: string[]): Promise<DnsGateway> {
  const lookup = slowLookup();
  const g = await fileGateway(ADMIN, network(allow), { lookup: lookup.lookup });
  return { ...g, admin: adminClient(g.gw.admin.port, ADMIN), lookup };
}

/**
 * Sends GET http://slow.test:PORT/`path` through the proxy, makes `change` while its name is
 * being looked up, then lets the lookup answer: the answer and the request's event records.
 */
async function changeDuringLookup(g: DnsGateway, path: string, change: () => Promise<void>) {
  const url = `http://${TARGET}/${path}`;
  const answer = curl(['-x', `http://127.0.0.1:${g.gw.proxy.port}`, url]);
  await g.lookup.wasAsked;
  await change();
  g.lookup.release();
  const res = await answer;
  const events = eventsOf(readRecords(g.journal), SESSION).filter((e) => e.target === url);
  return { res, events };
}

/** Replays the journal against the config file as it is now; the live decisions refused it. */
async function replayed(g: DnsGateway) {
  const verdicts = await replayVerdicts(g.journal, g.file);
  expect(verdicts.live).toContainEqual(['REVIEW', 'network']);
  return verdicts;
}

/** The refusal as the agent reads it, and what reached the upstream. */
function expectRefused(res: Awaited<ReturnType<typeof curl>>, path: string, verdict: RegExp) {
  expect(res.status).toBe(403);
  expect(res.headers['x-trajgate-verdict']).toMatch(verdict);
  expect(res.body).toMatch(/^trajgate refused this request/);
  expect(up.seen.some((r) => r.url === `/${path}`)).toBe(false);
}

describe('a decision is taken again after its DNS lookup', () => {
  it('a deny pattern added during the lookup refuses the request; replay agrees', async () => {
    const g = await dnsGateway([TARGET]);
    const { res, events } = await changeDuringLookup(g, 'deny', async () => {
      const added = await g.admin.post('/api/denies', { pattern: NAME });
      expect(added.status).toBe(201);
    });
    expectRefused(res, 'deny', /^REVIEW; boundary=network/);
    expect(res.body).toContain('blocked by an operator (d');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ verdict: 'REVIEW' });
    expect(events[0]?.denied).toContain(NAME);
    const added = readRecords(g.journal).find((r) => r.type === 'deny-pattern');
    expect(added?.seq).toBeLessThan(events[0]?.seq as number);
    const { live, again } = await replayed(g);
    expect(again).toEqual(live);
  });

  it('the same for a CONNECT: no 200, no connection to the upstream', async () => {
    const g = await dnsGateway([TARGET]);
    const connections = up.connections;
    const pending = connectTunnel(g.gw.proxy.port, TARGET);
    await g.lookup.wasAsked;
    expect((await g.admin.post('/api/denies', { pattern: NAME })).status).toBe(201);
    g.lookup.release();
    const t = await pending;
    t.socket.destroy();
    expect(t.status).toBe(403);
    expect(t.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(up.connections).toBe(connections);
    const events = eventsOf(readRecords(g.journal), SESSION).filter((e) => e.target === TARGET);
    expect(events).toHaveLength(1);
    expect(events[0]?.denied).toContain(NAME);
    const { live, again } = await replayed(g);
    expect(again).toEqual(live);
  });

  it('a revoke during the lookup of the approval that allowed it refuses the request; replay agrees', async () => {
    const g = await dnsGateway([]);
    const approved = await g.admin.post('/api/approvals', { pattern: TARGET });
    expect(approved.status).toBe(201);
    const id = approved.json.approval.id as string;
    const { res, events } = await changeDuringLookup(g, 'revoke', async () => {
      expect((await g.admin.call('DELETE', `/api/approvals/${id}`)).status).toBe(200);
    });
    expectRefused(res, 'revoke', /^REVIEW; boundary=network/);
    expect(events).toEqual([
      expect.objectContaining({ verdict: 'REVIEW', boundary: 'network', approved: false }),
    ]);
    const { live, again } = await replayed(g);
    expect(again).toEqual(live);
  });

  it('a reload during the lookup that drops its allow entry refuses the request; replay agrees', async () => {
    const g = await dnsGateway([TARGET]);
    const { res, events } = await changeDuringLookup(g, 'reload', async () => {
      g.write(network([]));
      expect((await g.admin.post('/api/reload', {})).status).toBe(200);
    });
    expectRefused(res, 'reload', /^REVIEW; boundary=network/);
    expect(events).toEqual([
      expect.objectContaining({ verdict: 'REVIEW', boundary: 'network', approved: false }),
    ]);
    // Replayed against the config as it is now, the one the request was decided by.
    const { live, again } = await replayed(g);
    expect(again).toEqual(live);
  });
});
