import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RefusalRecord } from '../../src/journal/records.js';
import { TARGET_BYTES } from '../../src/journal/long-target.js';
import { PER_SECOND } from '../../src/journal/refusal-limits.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { refusals } from '../helpers/tls.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Refusals before a request has an identity cannot fill the disk: each record keeps at most
 * TARGET_BYTES of target, and past PER_SECOND a second from one address a summary record
 * (`suppressed: N`) stands for the rest. One request gets one refusal record.
 */
const { start } = gatewayPerTest({
  agents: [{ id: 'agent-1', token: 'agent-one-token-0123456789' }],
});

const LONG_URL = `http://example.com/${'a'.repeat(15 * 1024)}`;
const request = (close: boolean) =>
  `GET ${LONG_URL} HTTP/1.1\r\nHost: example.com\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
const statuses = (text: string) => [...text.matchAll(/^HTTP\/1\.1 (\d{3}) /gm)].map((m) => m[1]);

/** Refusals written one by one, plus those the summaries stand for. */
function accounted(g: TestGateway): number {
  return refusals(g.records()).reduce((n, r) => n + (r.suppressed ?? 1), 0);
}

describe('unauthenticated refusals', () => {
  it('1,000 with 15 KB URLs grow the journal by less than 2 MB; summaries count the rest', async () => {
    const g = await start();
    const before = statSync(g.journalPath).size;
    // Four connections, 250 pipelined requests each; the last one closes its connection.
    const responses = await Promise.all(
      Array.from({ length: 4 }, () =>
        exchange(g.gw.proxy.port, request(false).repeat(249) + request(true), {
          timeoutMs: 15_000,
        }),
      ),
    );
    const all = responses.flatMap((r) => statuses(r.text));
    expect(all).toHaveLength(1000);
    expect(new Set(all)).toEqual(new Set(['407']));
    await waitFor(() => accounted(g) === 1000);
    expect(statSync(g.journalPath).size - before).toBeLessThan(2 * 1024 * 1024);
    const records = refusals(g.records());
    const summaries = records.filter((r) => r.suppressed !== undefined);
    const single = records.filter((r) => r.suppressed === undefined);
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries[0]).toMatchObject({ type: 'refusal', client: '127.0.0.1', status: 407 });
    expect(summaries[0]?.reason).toMatch(/more refusals within one second/);
    // At most PER_SECOND written one by one for each second a summary covers (and the last).
    expect(single.length).toBeLessThanOrEqual(PER_SECOND * (summaries.length + 1));
    for (const r of single) {
      expect(r).toMatchObject({
        status: 407,
        targetSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(Buffer.byteLength(r.target ?? '')).toBeLessThanOrEqual(TARGET_BYTES);
    }
  });

  it('a single 400 with a 15 KB target keeps 512 bytes of it, with its size and SHA-256', async () => {
    const g = await start();
    const res = await exchange(
      g.gw.proxy.port,
      `GET /${'b'.repeat(15 * 1024)} HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    await waitFor(() => refusals(g.records()).length === 1);
    const [record] = refusals(g.records()) as [RefusalRecord];
    const whole = `/${'b'.repeat(15 * 1024)}`;
    const sha256 = createHash('sha256').update(whole).digest('hex');
    expect(record).toMatchObject({ status: 400, targetBytes: whole.length, targetSha256: sha256 });
    expect(record.target).toBe(`/${'b'.repeat(TARGET_BYTES - 1)}`);
  });
});

describe('one request, one refusal record', () => {
  it('a 407 whose unread body then fails to parse is not refused again', async () => {
    const g = await start();
    const res = await exchange(
      g.gw.proxy.port,
      'POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    );
    expect(statuses(res.text)).toEqual(['407']);
    expect(res.headers.connection).toBe('close');
    expect(res.closed).toBe(true);
    expect(refusals(g.records()).map((r) => r.status)).toEqual([407]);
  });
});
