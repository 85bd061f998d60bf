import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/load.js';
import { proxyServerOptions } from '../../src/ingress/proxy.js';
import type { ParseRecord } from '../helpers/parse-record.js';
import { leanParse, NodeReference } from '../helpers/parse-record.js';
import { corpusRequests } from '../helpers/request-corpus.js';
import { generatedRequests, seededRandom } from '../helpers/request-mutations.js';

/**
 * The lean request parser against `node:http`, the proxy listener's parser today. Every request
 * of the proxy's bad-input, smuggling and disagreement suites and of a generated corpus goes to
 * a real `node:http` server configured as the listener (proxyServerOptions, over loopback) and
 * to the lean parser: both must read the same requests (method, target, version, fields, body,
 * trailers, keep-alive, upgrade and what follows it) and refuse with the same answer. The lean
 * parser may refuse where `node:http` accepted only in the cases of STRICTER; never the reverse.
 */
const LIMITS = defaultConfig('/tmp', { HOME: '/tmp' }).limits;
const SEED = 0x1ea9;

/**
 * Where the lean parser refuses what `node:http` takes. Past 1,000 fields `node:http` keeps in
 * `headers` only the first 1,000 and in `rawHeaders` what came before the count passed 2,000
 * names and values, while llhttp frames with them all: a request judged on a part of its head.
 */
const STRICTER = [
  '1001 header fields: HPE_HEADER_OVERFLOW 431',
  '1001 trailer fields: HPE_HEADER_OVERFLOW 431',
  '1100 header fields: HPE_HEADER_OVERFLOW 431',
  '1100 trailer fields: HPE_HEADER_OVERFLOW 431',
];

interface Outcome {
  /** Cases where the two records differ in any other way: must stay empty. */
  readonly differ: { name: string; node: ParseRecord; lean: ParseRecord }[];
  /** Refused by the lean parser only, as `name: code status`. */
  readonly stricter: string[];
  accepted: number;
  refused: number;
}

let reference: NodeReference;
let small: NodeReference;
beforeAll(async () => {
  reference = await NodeReference.start(proxyServerOptions(LIMITS));
  small = await NodeReference.start(proxyServerOptions({ ...LIMITS, headerBytes: 4_096 }));
});
afterAll(() => Promise.all([reference.close(), small.close()]));

/** Each case to `node:http` (one connection each, in turn) and to the lean parser, whole. */
async function differential(
  node: NodeReference,
  headerBytes: number,
  cases: readonly { name: string; bytes: Buffer }[],
): Promise<Outcome> {
  const outcome: Outcome = { differ: [], stricter: [], accepted: 0, refused: 0 };
  for (const { name, bytes } of cases) {
    const expected = await node.parse(bytes);
    const lean = leanParse([bytes], headerBytes);
    if (expected.error === null && lean.error !== null) {
      outcome.stricter.push(`${name}: ${lean.error.code} ${lean.error.status}`);
    } else if (!isDeepStrictEqual(lean, expected)) {
      outcome.differ.push({ name, node: expected, lean });
    }
    if (expected.error === null) outcome.accepted++;
    else outcome.refused++;
  }
  return outcome;
}

describe('lean request parser = node:http, request for request', () => {
  it.each([
    { headerBytes: LIMITS.headerBytes, node: () => reference },
    { headerBytes: 4_096, node: () => small },
  ])("the proxy suites' requests, headerBytes $headerBytes", async ({ headerBytes, node }) => {
    const cases = corpusRequests(8080);
    const outcome = await differential(node(), headerBytes, cases);
    expect(outcome.differ).toEqual([]);
    expect(outcome.stricter).toEqual([]);
    // Both sides of the corpus are there: the test would notice a parser that refuses all.
    expect(outcome.accepted).toBeGreaterThanOrEqual(30);
    expect(outcome.refused).toBeGreaterThanOrEqual(15);
  });

  it('a generated corpus: the same, or refused only where STRICTER says', async () => {
    const cases = generatedRequests(SEED, LIMITS.headerBytes);
    expect(cases.length).toBeGreaterThan(2_500);
    const outcome = await differential(reference, LIMITS.headerBytes, cases);
    expect(outcome.differ).toEqual([]);
    expect(outcome.stricter).toEqual(STRICTER);
    expect(outcome.accepted).toBeGreaterThan(400);
    expect(outcome.refused).toBeGreaterThan(1_000);
  });
});

describe('the lean parser reads the same however the bytes are split', () => {
  const cases = [...corpusRequests(8080), ...generatedRequests(SEED, LIMITS.headerBytes)];

  it('one byte per feed', () => {
    const differ = cases.flatMap(({ name, bytes }) => {
      const whole = leanParse([bytes], LIMITS.headerBytes);
      const bytewise = leanParse(
        Array.from(bytes, (b) => Buffer.of(b)),
        LIMITS.headerBytes,
      );
      return isDeepStrictEqual(bytewise, whole) ? [] : [name];
    });
    expect(differ).toEqual([]);
  });

  it('at three seeded points per case', () => {
    const next = seededRandom(SEED);
    const cut = (n: number) => Math.floor(next() * (n + 1));
    const differ = cases.flatMap(({ name, bytes }) => {
      const at = [cut(bytes.length), cut(bytes.length), cut(bytes.length)].sort((a, b) => a - b);
      const pieces = [0, ...at].map((from, i) => bytes.subarray(from, [...at, bytes.length][i]));
      const whole = leanParse([bytes], LIMITS.headerBytes);
      const split = leanParse(pieces, LIMITS.headerBytes);
      return isDeepStrictEqual(split, whole) ? [] : [name];
    });
    expect(differ).toEqual([]);
  });
});
