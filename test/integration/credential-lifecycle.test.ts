import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventRecord, PauseJournalRecord, TunnelRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import { fileGateway } from '../helpers/file-gateway.js';
import type { FileGateway } from '../helpers/file-gateway.js';
import { fixture, interceptConfig, makeLocalCa, runNode } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * A credential over time: a reload rotates its value (the sentinel stays), a revoke closes the
 * flow that carries it at once, and a pause on its sentinel out of place names the event that
 * first carried it.
 */
const ADMIN = 'admin-token-for-credentials-0123';
const ca = makeLocalCa();
const echo = await startUpstream({ tls: true });
const other = await startUpstream({ tls: true });
const SENTINEL = 'tgs_github_0123456789abcdef';

/** An HTTPS upstream whose `/slow` answer sends its head and a first line, then waits. */
const waiting: ServerResponse[] = [];
const slow = createServer(
  { cert: readFileSync(fixture('server.pem')), key: readFileSync(fixture('server-key.pem')) },
  (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).write('first\n');
    waiting.push(res);
  },
);
await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
const SLOW = (slow.address() as AddressInfo).port;
afterAll(() => {
  for (const res of waiting) res.destroy();
  slow.closeAllConnections();
});

const hosts = [`127.0.0.1:${echo.port}`, `127.0.0.1:${SLOW}`];
const config = (valueFile: string) => ({
  ...interceptConfig({
    ca,
    intercept: [...hosts, `localhost:${other.port}`],
    allow: [...hosts, `localhost:${other.port}`],
    ports: [echo.port, SLOW, other.port],
  }),
  credentials: [{ name: 'github', valueFile, sentinel: SENTINEL, hosts, scheme: 'Bearer' }],
});

async function start(value: string): Promise<{ g: FileGateway; file: string }> {
  const file = join(tempDir(), 'github-token');
  writeFileSync(file, `${value}\n`);
  return { g: await fileGateway(ADMIN, config(file)), file };
}

const via = (g: FileGateway) => [
  '--cacert',
  ca.certPath,
  '-x',
  `http://127.0.0.1:${g.gw.proxy.port}`,
  '--http1.1',
];
const bearer = ['-H', `Authorization: Bearer ${SENTINEL}`];

describe('a credential over time', () => {
  it('a reload rotates the value; the sentinel and the agent stay the same', async () => {
    const { g, file } = await start('ghp_first-value-0123456789');
    await curl([...via(g), ...bearer, `https://127.0.0.1:${echo.port}/a`]);
    expect(echo.seen.at(-1)?.headers.authorization).toBe('Bearer ghp_first-value-0123456789');
    writeFileSync(file, 'ghp_second-value-0123456789\n');
    const res = await adminClient(g.gw.admin.port, ADMIN).post('/api/reload', {});
    expect(res.status).toBe(200);
    await curl([...via(g), ...bearer, `https://127.0.0.1:${echo.port}/b`]);
    expect(echo.seen.at(-1)?.headers.authorization).toBe('Bearer ghp_second-value-0123456789');
    expect(g.gw.credentials.armed[0]?.sentinel).toBe(SENTINEL);
    const text = readFileSync(g.journal, 'utf8');
    expect(text).not.toContain('ghp_first-value');
    expect(text).not.toContain('ghp_second-value');
  });

  it('a revoke closes the open request that carries it, journaled with the cause', async () => {
    const { g } = await start('ghp_revoked-value-0123456789');
    const before = waiting.length;
    const run = runNode(
      `import { request, ProxyAgent } from 'undici';
       const res = await request(process.env.URL, { dispatcher: new ProxyAgent(process.env.PROXY),
         headers: { authorization: 'Bearer ${SENTINEL}' } });
       let text = '';
       try { for await (const c of res.body) text += c; } catch (e) { text += 'ERR ' + e.code; }
       process.stdout.write(res.statusCode + ' ' + JSON.stringify(text));`,
      {
        URL: `https://127.0.0.1:${SLOW}/slow`,
        PROXY: `http://127.0.0.1:${g.gw.proxy.port}`,
        NODE_EXTRA_CA_CERTS: ca.certPath,
      },
    );
    await waitFor(() => waiting.length > before, 20_000, 'the slow answer to start');
    const res = await adminClient(g.gw.admin.port, ADMIN).post(
      '/api/credentials/github/revoke',
      {},
    );
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      credential: { name: 'github', revoked: true },
      changed: true,
      closed: 1,
    });
    const ran = await run;
    const out = ran.stdout + ran.stderr;
    expect(out).toMatch(/^200 "first\\n/);
    const records = await waitForRecords(g, (r) => r.type === 'flow' && r.change === 'closed');
    const closed = records.find(
      (r): r is TunnelRecord => r.type === 'flow' && r.change === 'closed',
    );
    expect(closed?.reason).toBe('credential github was revoked (credential github revoked)');
    // The next request with the sentinel is refused with the reason.
    const next = await curl([...via(g), ...bearer, `https://127.0.0.1:${echo.port}/c`]);
    expect(next.status).toBe(403);
    expect(next.body).toContain('credential github was revoked');
  });

  it("a pause on its sentinel out of place names the session's first event that carried it", async () => {
    const { g } = await start('ghp_first-seen-value-0123456789');
    await curl([...via(g), ...bearer, `https://127.0.0.1:${echo.port}/use`]);
    const used = g.records().find((r): r is EventRecord => r.type === 'event');
    expect(used?.credentials).toEqual(['github']);
    const leak = await curl([
      ...via(g),
      '-H',
      `X-Copy: ${SENTINEL}`,
      `https://localhost:${other.port}/x`,
    ]);
    expect(leak.status).toBe(403);
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    const pause = records.find((r): r is PauseJournalRecord => r.type === 'pause');
    expect(pause?.trigger.exfiltration).toEqual({ credential: 'github', where: 'header X-Copy' });
    expect(pause?.firstSeen).toMatchObject({
      seq: used?.seq,
      target: `https://127.0.0.1:${echo.port}/use`,
    });
  });
});
