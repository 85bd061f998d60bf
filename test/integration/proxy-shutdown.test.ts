import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { spawnCli } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import { readRecords } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/** The built CLI drains an in-flight request on SIGTERM, exits 0 and leaves a whole journal. */
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

describe('graceful SIGTERM (trajgate start)', () => {
  it('an in-flight request completes 200, new ones are refused, exit 0, journal complete', async () => {
    const dir = tempDir();
    const journal = join(dir, 'journal.jsonl');
    const config = join(dir, 'trajgate.yaml');
    writeFileSync(
      config,
      stringify({
        version: 1,
        workspace: dir,
        journal,
        listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
        network: { allow: [`127.0.0.1:${slowPort}`], allowPrivate: ['127.0.0.1/32'] },
        limits: { drainTimeout: '8s' },
      }),
    );
    const cli = spawnCli(['start', '--config', config], { env: { TRAJGATE_LOG_LEVEL: 'warn' } });
    try {
      const banner = await cli.waitFor(/proxy listening on http:\/\/127\.0\.0\.1:\d+/);
      const port = Number(/proxy listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(banner)?.[1]);
      expect(port).toBeGreaterThan(0);
      const proxy = `http://127.0.0.1:${port}`;

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
      await cli.waitFor('trajgate: stopped; journal synced');
      const stoppedAfter = Date.now() - signalled;
      expect(await cli.exited).toBe(0);
      const exitedAfter = Date.now() - signalled;
      expect(cli.output().stderr).toContain('trajgate: stopped; journal synced');
      // Issue 11: sessions named by client address are only as good as the agent's addresses.
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
      expect(outcome).toMatchObject({ ref: event?.seq, status: 200, bytesDown: 12 });
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
