import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import { manyFields } from '../helpers/request-corpus.js';
import { startUpstream } from '../helpers/upstream.js';
import type { RefusalRecord } from '../../src/journal/records.js';

/**
 * node:http keeps 1,000 header fields in `req.headers` and a few more in rawHeaders, but frames
 * the body by every one: a Transfer-Encoding placed after the 1,000th was used for framing and
 * unseen by the checks. A head of more than 1,000 fields is refused (431), as the lean parser
 * refuses it; exactly 1,000 still goes through.
 */
const upstream = await startUpstream();
let g: TestGateway;

beforeAll(async () => {
  g = await startTestGateway({
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
    limits: { headerBytes: 65_536 },
  });
});
afterAll(() => g.stop());

const refusals = () =>
  g.records().filter((r): r is RefusalRecord => r.type === 'refusal' && r.status === 431);

describe('the number of header fields', () => {
  it.each([1001, 1024, 3000])(
    '%i fields, Transfer-Encoding last → 431, nothing sent',
    async (n) => {
      const before = refusals().length;
      const seen = upstream.seen.length;
      const res = await exchange(g.gw.proxy.port, manyFields(upstream.port, n));
      expect(res.status).toBe(431);
      expect(res.body).toContain('more than 1000 fields');
      expect(refusals()).toHaveLength(before + 1);
      expect(upstream.seen.length).toBe(seen);
    },
  );

  it('1000 fields, Transfer-Encoding the 1,000th → forwarded with its body', async () => {
    const seen = upstream.seen.length;
    const res = await exchange(g.gw.proxy.port, manyFields(upstream.port, 1000));
    expect(res.status).toBe(200);
    const got = upstream.seen.slice(seen);
    expect(got.map((r) => [r.url, r.body])).toEqual([['/many', 'hello']]);
  });
});
