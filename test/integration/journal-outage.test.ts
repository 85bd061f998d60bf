import { Writable } from 'node:stream';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import { adminClient, agentAuth, viaProxy as curlViaProxy } from '../helpers/admin.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { fillDisk } from '../helpers/full-disk.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

interface Line {
  level: number;
  msg: string;
  failures?: number;
}
const lines: Line[] = [];
const log = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Line);
      done();
    },
  }),
);
const failureLines = () => lines.filter((l) => l.msg.startsWith('journal: ') && l.level === 50);
const recoveryLines = () => lines.filter((l) => l.msg.startsWith('journal: writable again'));

const upstream = await startUpstream();
const dir = tempDir();
const journal = join(dir, 'journal.jsonl');
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const gw = await startGateway(
  parseConfig(
    stringify({
      version: 1,
      workspace: tempDir('trajgate-ws-'),
      journal,
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
      agents: [{ id: 'agent-1', token: agentToken('agent-1') }],
      admin: { token: ADMIN_TOKEN },
      network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    }),
    'test config',
    dir,
  ),
  { log },
);
afterAll(() => gw.stop());
const admin = adminClient(gw.admin.port, ADMIN_TOKEN);

/** One GET through the proxy as agent-1 (curl: a real client). */
async function viaProxy(): Promise<{ status: number; body: string }> {
  return curlViaProxy(
    `http://127.0.0.1:${gw.proxy.port}`,
    `http://127.0.0.1:${upstream.port}/x`,
    agentAuth('agent-1', agentToken('agent-1')),
  );
}

const failuresMetric = async () => {
  const text = (await admin.get('/metrics')).text;
  return Number(/^trajgate_journal_failures_total (\d+)$/m.exec(text)?.[1]);
};

/**
 * A disk that fills up under a running gateway and is freed again: the journal writer's
 * descriptor is pointed at /dev/full, then back (test/helpers/full-disk.ts).
 */
describe('a journal that cannot be written: loud, refused with 503, recovered', () => {
  it('counts, logs once a second, reports degraded health, then recovers once', async () => {
    expect((await viaProxy()).status).toBe(200);
    expect((await admin.get('/api/health')).json).toMatchObject({
      status: 'ok',
      journal: { writable: true, failures: 0, lastFailure: null },
    });
    expect((await admin.get('/api/health', { token: null })).status).toBe(401);
    const metrics = (await admin.get('/metrics')).text;
    expect(metrics).toMatch(/^trajgate_journal_failures_total 0$/m);
    expect(metrics).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(metrics).toMatch(/^nodejs_heap_size_used_bytes \d+/m);

    const roomAgain = fillDisk(journal);
    const began = Date.now();
    for (let i = 0; i < 30; i++) {
      const refused = await viaProxy();
      expect(refused.status).toBe(503);
      expect(refused.body).toMatch(/cannot write its journal/);
    }
    const ingest = await postAsAgent(`http://127.0.0.1:${gw.bridge.port}/events`, 'agent-1', {
      kind: 'command',
      target: join(dir, 'build'),
    });
    expect(ingest.status).toBe(503);
    expect(JSON.stringify(ingest.json)).toMatch(/journal/);
    const burstMs = Date.now() - began;

    const health = (await admin.get('/api/health')).json;
    expect(health).toMatchObject({ status: 'degraded', journal: { writable: false } });
    expect(health.journal.lastFailure.error).toMatch(/ENOSPC/);
    const failed = health.journal.failures as number;
    expect(failed).toBeGreaterThanOrEqual(31);
    expect(await failuresMetric()).toBe(failed);

    // Not a line per refused request: the first at once, then at most one a second.
    expect(failureLines().length).toBeLessThanOrEqual(1 + Math.floor(burstMs / 1_000));
    expect(failureLines()[0]?.failures).toBe(1);
    // The rest are counted into the next line, within a second.
    await waitFor(
      () => failureLines().reduce((n, l) => n + (l.failures ?? 0), 0) === failed,
      3_000,
    );

    roomAgain();
    expect((await viaProxy()).status).toBe(200);
    expect(recoveryLines()).toHaveLength(1);
    expect(recoveryLines()[0]?.failures).toBe(failed);
    expect((await viaProxy()).status).toBe(200);
    expect(recoveryLines()).toHaveLength(1);
    expect((await admin.get('/api/health')).json).toMatchObject({
      status: 'ok',
      journal: { writable: true, failingSince: null, failures: failed },
    });
    expect(await failuresMetric()).toBe(failed);
  });
});
