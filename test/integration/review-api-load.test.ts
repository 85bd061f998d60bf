import { closeSync, openSync, writeSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_WAITING } from '../../src/review/admin-queue.js';
import { startChild, writeConfig } from '../helpers/child-gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * The operator's reads and the agents' requests together: a gateway (its own process) reads
 * back a journal of 400,000 lines; agents send requests through the proxy in rounds alone and
 * while admin callers read the events route over and over (newest pages, pages past the index,
 * a session whose events are all at the file's start). Every agent request and every page is
 * answered, pages chain by their cursors; the agents' p99 with and without the reads is
 * printed, not asserted (speed is the bench's to show: `node bench/review/events.mjs`). Past
 * the admin queue, calls are refused 429 with Retry-After.
 */
const LINES = 400_000;
const ADMIN = 'load-admin-token-0123456789abcdef';
const AGENTS = Array.from({ length: 4 }, (_, i) => ({
  id: `agent-${i}`,
  token: `load-agent-${i}-token-0123456789`,
}));
const OLD = 'archived-agent';

/** Events and their outcomes, round-robin over the agents; OLD's only in the first 5 %. */
function journal(path: string): void {
  const fd = openSync(path, 'w', 0o600);
  const ts = new Date(Date.now() - 3_600_000).toISOString();
  let text = '';
  for (let seq = 1; seq <= LINES; seq += 2) {
    const session = seq < LINES / 20 && seq % 8 === 1 ? OLD : AGENTS[(seq >> 1) % 4]!.id;
    const target = `http://registry.example.com/p/${session}/${seq}`;
    text +=
      JSON.stringify({
        seq,
        ts,
        type: 'event',
        session,
        source: 'proxy',
        kind: 'network',
        target,
        method: 'GET',
        approved: true,
        verdict: 'ALLOW',
        boundary: null,
        count: 0,
        reason: 'allowlisted',
      }) +
      '\n' +
      JSON.stringify({
        seq: seq + 1,
        ts,
        type: 'outcome',
        rid: seq,
        session,
        status: 200,
        bytesUp: 0,
        bytesDown: 512,
        durationMs: 3,
      }) +
      '\n';
    if (text.length > 4 << 20) {
      writeSync(fd, text);
      text = '';
    }
  }
  writeSync(fd, text);
  closeSync(fd);
}

const dir = tempDir();
journal(join(dir, 'journal.jsonl'));
const upstream = await startUpstream();
const child = await startChild(
  writeConfig(dir, {
    version: 1,
    workspace: tempDir('trajgate-ws-'),
    journal: join(dir, 'journal.jsonl'),
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents: AGENTS,
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
  }),
  60_000,
);
afterAll(() => child.kill('SIGTERM'));

/** One GET through the proxy; resolves its status (0 for a failed connection). */
function viaProxy(agent: http.Agent, auth: string, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({
      host: '127.0.0.1',
      port: child.proxyPort,
      path: `${upstream.url}${path}`,
      agent,
      headers: { host: `127.0.0.1:${upstream.port}`, 'proxy-authorization': auth },
    });
    req.on('error', () => resolve(0));
    req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)));
    req.end();
  });
}

/** Every agent sends `n` requests one after another; their latencies in ms. */
async function agentsSend(n: number): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    AGENTS.map(async (a) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const auth = `Basic ${Buffer.from(`${a.id}:${a.token}`).toString('base64')}`;
      for (let k = 0; k < n; k++) {
        const t = performance.now();
        expect(await viaProxy(agent, auth, `/${a.id}/${k}`)).toBe(200);
        latencies.push(performance.now() - t);
      }
      agent.destroy();
    }),
  );
  return latencies;
}

/** A GET of the admin API; keeps the body's last bytes only (this process runs the agents). */
const admin = async (path: string) => {
  const res = await request(`http://127.0.0.1:${child.adminPort}${path}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  let tail = Buffer.alloc(0);
  for await (const chunk of res.body) tail = Buffer.concat([tail, chunk as Buffer]).subarray(-200);
  return { status: res.statusCode, headers: res.headers, tail: tail.toString() };
};

/** Two callers walking pages of the events route (bounded) until `done` settles. */
async function readWhile(done: Promise<unknown>): Promise<number> {
  let running = true;
  void done.then(() => (running = false));
  let calls = 0;
  const walk = async (c: number) => {
    for (let n = c; running && calls < 10_000; n += 2) {
      const session = n % 3 === 2 ? OLD : AGENTS[n % 4]!.id;
      for (let p = 0, cursor = ''; p < 8 && running; p++, calls++) {
        const r = await admin(`/api/sessions/${session}/events?limit=1000${cursor}`);
        expect(r.status).toBe(200);
        const next = /"next":(\d+)\}$/.exec(r.tail)?.[1];
        if (!next) break;
        cursor = `&before=${next}`;
      }
    }
  };
  await Promise.all([walk(0), walk(1)]);
  return calls;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;

describe('admin reads against a large journal', () => {
  it('are all answered while the agents are, pages chaining by their cursors', async () => {
    await agentsSend(100); // warm-up
    const alone: number[] = [];
    const read: number[] = [];
    let calls = 0;
    // Short rounds in turn, so that a burst of other load on the host hits both alike.
    for (let round = 0; round < 4; round++) {
      alone.push(...(await agentsSend(250)));
      const sending = agentsSend(250);
      calls += await readWhile(sending);
      read.push(...(await sending));
    }
    const ratio = p99(read) / p99(alone);
    console.log(
      `agents' p99: ${p99(alone).toFixed(2)} ms alone, ${p99(read).toFixed(2)} ms with ${calls} events calls (ratio ${ratio.toFixed(2)})`,
    );
    expect(calls).toBeGreaterThan(10);
    expect(read).toHaveLength(4 * 4 * 250);
  }, 120_000);

  it('refuses calls past the admin queue with 429 and Retry-After', async () => {
    const burst = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        admin(`/api/sessions/${AGENTS[i % 4]!.id}/events?limit=1000&before=${LINES / 2}`),
      ),
    );
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(burst.length - refused.length).toBeGreaterThanOrEqual(1 + ADMIN_WAITING);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    for (const r of refused) {
      expect(r.headers['retry-after']).toBe('1');
      expect(JSON.parse(r.tail).error.code).toBe('E_BUSY');
    }
    // the queue drains: the next call is served
    expect((await admin('/api/sessions')).status).toBe(200);
  });
});
