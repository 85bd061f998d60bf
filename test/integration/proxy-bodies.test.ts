import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { makeLocalCa, refusals, startInterceptGateway } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Request bodies through the forward proxy: `Expect: 100-continue` answered by trajgate once
 * judged (never forwarded, never sent for a refused request), other expectations 417, and a
 * body that stops arriving answered 408 after `limits.bodyTimeout` with the upstream aborted.
 */
const up = await startUpstream();
const tlsUp = await startUpstream({ tls: true });
const ca = makeLocalCa();

/** Each request the sink received, and whether it arrived whole (null while in progress). */
const sunk: { url: string; complete: boolean | null }[] = [];
const sink = createServer((req, res) => {
  const seen = { url: req.url ?? '', complete: null as boolean | null };
  sunk.push(seen);
  req.resume();
  req.once('end', () => res.end('ok\n'));
  req.once('close', () => (seen.complete = req.complete));
});
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
const SINK = `127.0.0.1:${(sink.address() as AddressInfo).port}`;
afterAll(() => {
  sink.closeAllConnections();
  return new Promise<void>((r) => sink.close(() => r()));
});

// 2 MiB of ASCII (the echo upstream reads bodies as text); curl sends Expect past 1 MiB.
const CONTENT = randomBytes(2 ** 20).toString('hex');
const UPLOAD = join(tempDir(), 'upload.txt');
writeFileSync(UPLOAD, CONTENT);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const UP = `127.0.0.1:${up.port}`;
const { start } = gatewayPerTest({
  network: {
    allow: [`POST http://${UP}/upload`, SINK],
    allowPrivate: ['127.0.0.0/8'],
    ports: [up.port, Number(SINK.split(':')[1])],
  },
  // A second refusal pauses the session: answered at once, not held.
  policy: { pause: 'block' },
});

const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');

/**
 * Bytes an outcome counts for a body of `body` bytes: the request line and header section sent
 * up count too (volume rules), a few hundred bytes here.
 */
const sentUp = (body: number) => expect.toSatisfy((n: number) => n > body + 40 && n < body + 1024);

/** The 2 MiB upload reached `seen` whole and without Expect; the outcome counted it. */
async function expectDelivered(g: TestGateway, seen: typeof up.seen): Promise<void> {
  const got = seen.at(-1);
  expect(got?.headers.expect).toBeUndefined();
  expect(got?.headers['content-length']).toBe(String(CONTENT.length));
  expect(sha256(got?.body ?? '')).toBe(sha256(CONTENT));
  await waitFor(() => outcomes(g).length === 1);
  expect(outcomes(g)[0]).toMatchObject({
    status: 200,
    bytesUp: sentUp(CONTENT.length),
  });
}

describe('Expect: 100-continue', () => {
  it('a 2 MiB curl upload gets 100 Continue, then 200; the upstream got every byte', async () => {
    const g = await start();
    const res = await curl([
      '-v',
      '-x',
      g.proxyUrl,
      '--data-binary',
      `@${UPLOAD}`,
      `http://${UP}/upload`,
    ]);
    expect(res.stderr).toMatch(/^> Expect: 100-continue/im);
    expect(res.stderr).toMatch(/^< HTTP\/1\.1 100 Continue/m);
    expect(res.status).toBe(200);
    await expectDelivered(g, up.seen);
  });

  it('the same upload through intercepted TLS (HTTP/1.1: HTTP/2 has no Expect from curl)', async () => {
    const tls = `127.0.0.1:${tlsUp.port}`;
    const g = await startInterceptGateway({
      ca,
      intercept: [tls],
      allow: [`POST https://${tls}/upload`],
      ports: [tlsUp.port],
    });
    onTestFinished(() => g.stop());
    const res = await curl([
      ...['-v', '--http1.1', '--cacert', ca.certPath, '-x', g.proxyUrl],
      ...['--data-binary', `@${UPLOAD}`, `https://${tls}/upload`],
    ]);
    expect(res.stderr).toMatch(/^> Expect: 100-continue/im);
    expect(res.status).toBe(200);
    await expectDelivered(g, tlsUp.seen);
  });

  it('a refused upload gets its 403 without 100 Continue; nothing reaches the upstream', async () => {
    const g = await start();
    const connections = up.connections;
    const raw = await exchange(
      g.gw.proxy.port,
      `POST http://${UP}/elsewhere HTTP/1.1\r\nHost: ${UP}\r\nContent-Length: ${CONTENT.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    expect(raw.text).toMatch(/^HTTP\/1\.1 403 /);
    expect(raw.text).not.toContain('100 Continue');
    expect(raw.closed).toBe(true);
    const res = await curl(['-x', g.proxyUrl, '--data-binary', `@${UPLOAD}`, `http://${UP}/x`]);
    expect(res.status).toBe(403);
    expect(up.connections).toBe(connections);
    await waitFor(() => outcomes(g).length === 2);
    for (const o of outcomes(g)) {
      expect(o).toMatchObject({ status: 403, bytesUp: 0 });
    }
  });

  it.each(['something-else', '100-continue, something-else'])(
    'Expect: %s → 417, one refusal record, nothing judged or sent',
    async (expectation) => {
      const g = await start();
      const connections = up.connections;
      const res = await exchange(
        g.gw.proxy.port,
        `POST http://${UP}/upload HTTP/1.1\r\nHost: ${UP}\r\nContent-Length: 5\r\nExpect: ${expectation}\r\n\r\n`,
      );
      expect(res.status).toBe(417);
      expect(res.body).toMatch(/expectation .* is not supported/);
      const records = g.records();
      expect(records.map((r) => r.type)).toEqual(['refusal']);
      expect(records[0]).toMatchObject({
        status: 417,
        method: 'POST',
        target: `http://${UP}/upload`,
      });
      expect(up.connections).toBe(connections);
    },
  );
});

describe('limits.bodyTimeout: a gap in the request body', () => {
  const head = (length: number) =>
    `POST http://${SINK}/slow HTTP/1.1\r\nHost: ${SINK}\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;

  it('a body withheld past it → 408, the upstream request aborted, one outcome 408', async () => {
    const g = await start({ limits: { bodyTimeout: '300ms' } });
    const count = sunk.length;
    const res = await exchange(g.gw.proxy.port, head(1000) + 'x'.repeat(10));
    expect(res.status).toBe(408);
    expect(res.ms).toBeGreaterThanOrEqual(280);
    expect(res.ms).toBeLessThan(3_000);
    expect(res.closed).toBe(true);
    await waitFor(() => sunk[count]?.complete === false);
    await waitFor(() => outcomes(g).length === 1);
    const event = g.records().find((r): r is EventRecord => r.type === 'event');
    const [outcome, ...more] = outcomes(g);
    expect(more).toEqual([]);
    expect(outcome).toEqual(
      expect.objectContaining({ rid: event?.seq, status: 408, bytesUp: sentUp(10) }),
    );
    expect(outcome?.error).toMatch(/request body stalled: no bytes from the agent for 300 ms/);
    expect(refusals(g.records())).toEqual([]);
  });

  it('a slow but steady body is not cut: the limit is a gap, not a total', async () => {
    const g = await start({ limits: { bodyTimeout: '300ms' } });
    const chunks = Array.from({ length: 6 }, () => 'y'.repeat(10));
    const res = await exchange(g.gw.proxy.port, [head(60), ...chunks], { gapMs: 100 });
    expect(res.status).toBe(200);
    expect(res.ms).toBeGreaterThan(300);
    await waitFor(() => outcomes(g).length === 1);
    expect(outcomes(g)[0]).toMatchObject({ status: 200, bytesUp: sentUp(60) });
  });
});
