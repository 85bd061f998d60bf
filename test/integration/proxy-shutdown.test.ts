import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnGateway } from '../helpers/child-gateway.js';
import { curl } from '../helpers/curl.js';
import { readRecords } from '../helpers/gateway.js';
import { startSilentServer } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The built CLI on SIGTERM: drains an in-flight request (exit 0), answers held ones, cuts what
 * outlasts `limits.drainTimeout` (exit 3) and leaves a whole journal.
 */
const seen: string[] = [];
const slow = createServer((req, res) => {
  seen.push(req.url ?? '');
  setTimeout(() => res.end('slow answer\n'), 1_000);
});
await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
const slowPort = (slow.address() as AddressInfo).port;
afterAll(() => {
  slow.closeAllConnections();
  return new Promise<void>((r) => slow.close(() => r()));
});
/** Accepts and reads, never answers: a request to it is still running at any deadline. */
const silent = await startSilentServer();

/** `trajgate start` with `extra` config keys, and its proxy URL. */
async function startCli(extra: Record<string, unknown>) {
  const { cli, journal, proxy } = await spawnGateway(extra);
  return { cli, journal, proxy: `http://127.0.0.1:${proxy}` };
}

describe('graceful SIGTERM (trajgate start)', () => {
  it('an in-flight request completes 200, new ones are refused, exit 0, journal complete', async () => {
    const { cli, journal, proxy } = await startCli({
      network: { allow: [`127.0.0.1:${slowPort}`], allowPrivate: ['127.0.0.1/32'] },
      limits: { drainTimeout: '8s' },
    });
    try {
      const inFlight = curl(['-x', proxy, `http://127.0.0.1:${slowPort}/slow`]);
      await waitFor(() => seen.includes('/slow'));
      const signalled = Date.now();
      cli.child.kill('SIGTERM');
      await cli.waitFor('trajgate: stopping');
      const late = await curl(['-x', proxy, `http://127.0.0.1:${slowPort}/late`], 3_000);
      expect(late.exitCode).toBe(7); // couldn't connect: the listener is closed

      const res = await inFlight;
      expect(res.status).toBe(200);
      expect(res.body).toBe('slow answer\n');
      await cli.waitFor(/trajgate: stopped in \d+ ms; everything drained; journal synced/);
      const stoppedAfter = Date.now() - signalled;
      expect(await cli.exited).toBe(0);
      const exitedAfter = Date.now() - signalled;
      expect(res.headers.connection).toBe('close');
      // Sessions named by client address are only as good as the agent's addresses.
      expect(cli.output().stderr).toMatch(
        /warning: no `agents` configured, so the client address names the session: an agent able to use several source addresses escapes per-session counting/,
      );
      expect(seen).not.toContain('/late');

      const records = readRecords(journal);
      const event = records.find((r) => r.type === 'event');
      expect(event).toMatchObject({
        verdict: 'ALLOW',
        method: 'GET',
        target: `http://127.0.0.1:${slowPort}/slow`,
      });
      expect(records.filter((r) => r.type === 'event')).toHaveLength(1);
      const outcome = records.find((r) => r.type === 'outcome');
      expect(outcome).toMatchObject({ rid: event?.seq, status: 200, bytesDown: 12 });
      expect(outcome).not.toHaveProperty('error');
      expect((outcome as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(900);

      // Drained once the slow answer (~1 s) went out, well before drainTimeout (8 s)...
      expect(stoppedAfter).toBeLessThan(5_000);
      // ...and the process exits then too: the drain deadline's timer does not keep it alive.
      expect(exitedAfter).toBeLessThan(5_000);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});

describe('SIGTERM with held and stuck requests', () => {
  it('answers held requests at once and cuts what still runs at limits.drainTimeout; exit 3', async () => {
    const { cli, journal, proxy } = await startCli({
      network: { allow: [`127.0.0.1:${silent.port}`], allowPrivate: ['127.0.0.1/32'] },
      limits: { drainTimeout: '1s' },
    });
    try {
      const stuck = curl(['-x', proxy, `http://127.0.0.1:${silent.port}/stuck`]);
      await waitFor(() => silent.connections === 1);
      // Two unapproved requests: REVIEW, then PAUSE and held (holdTimeout 55 s by default).
      const stranger = `http://127.0.0.2:${silent.port}`;
      expect((await curl(['-x', proxy, `${stranger}/first`])).status).toBe(403);
      const held = curl(['-x', proxy, `${stranger}/second`]);
      await waitFor(() => readRecords(journal).some((r) => r.type === 'pause'));

      const signalled = Date.now();
      cli.child.kill('SIGTERM');
      // The held request is answered first, at once; the stuck one only at the drain deadline.
      const first = await Promise.race([held.then(() => 'held'), stuck.then(() => 'stuck')]);
      expect(first).toBe('held');
      const answered = await held;
      expect(answered.status).toBe(403);
      expect(answered.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
      expect(answered.body).toContain('The gateway is shutting down.');

      const cut = await stuck;
      expect(cut.exitCode).not.toBe(0); // curl: empty reply from server
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
      expect(await cli.exited).toBe(3);
      expect(Date.now() - signalled).toBeLessThan(5_000); // not upstreamTimeout (30 s)
      expect(cli.output().stderr).toMatch(
        /cut at the drain deadline: 1 request\(s\), 0 tunnel\(s\), 1 connection\(s\); journal synced/,
      );
      const stuckEvent = readRecords(journal).find(
        (r) => r.type === 'event' && r.target.endsWith('/stuck'),
      );
      expect(
        readRecords(journal).find((r) => r.type === 'outcome' && r.rid === stuckEvent?.seq),
      ).toMatchObject({ status: null });
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});
