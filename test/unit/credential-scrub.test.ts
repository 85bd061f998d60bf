import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CredentialScrubber } from '../../src/action/credential-scrub.js';
import { ScrubbedBody, scrubbedHead } from '../../src/action/scrub-body.js';
import { waitFor } from '../helpers/wait.js';

const VALUE = 'ghp_R3al+Val/ue=x&y"q\\é!*~';
const SENTINEL = 'tgs_github_0123456789abcdef';
const OTHER = { name: 'other', sentinel: 'tgs_other_fedcba9876543210', value: 'other-secret-0001' };
const scrubber = new CredentialScrubber([
  { name: 'github', sentinel: SENTINEL, value: VALUE },
  OTHER,
]);

const jsonEscaped = JSON.stringify(VALUE).slice(1, -1);
const rfc3986 = (lower: boolean) =>
  [...Buffer.from(VALUE)]
    .map((b) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${lower ? b.toString(16) : b.toString(16).toUpperCase()}`,
    )
    .join('');

/** Each spelling of VALUE an upstream may echo, in a body, and the body the agent must get. */
const cases: [string, string, string][] = [
  ['as is', `token=${VALUE};`, `token=${SENTINEL};`],
  ['JSON-escaped', `{"token":"${jsonEscaped}"}`, `{"token":"${SENTINEL}"}`],
  [
    'JSON-escaped, `/` as `\\/`',
    `{"t":"${jsonEscaped.replace('/', '\\/')}"}`,
    `{"t":"${SENTINEL}"}`,
  ],
  ['percent-encoded, upper-case hex', `?t=${rfc3986(false)}`, `?t=${SENTINEL}`],
  ['percent-encoded, lower-case hex', `?t=${rfc3986(true)}`, `?t=${SENTINEL}`],
  ['encodeURIComponent', `?t=${encodeURIComponent(VALUE)}`, `?t=${SENTINEL}`],
  [
    'twice, and another credential',
    `${VALUE}${VALUE} ${OTHER.value}`,
    `${SENTINEL}${SENTINEL} ${OTHER.sentinel}`,
  ],
  [
    'a near miss is left',
    `${VALUE.slice(0, -1)} ${OTHER.value.slice(1)}`,
    `${VALUE.slice(0, -1)} ${OTHER.value.slice(1)}`,
  ],
];

/** The body fed to a stream in pieces cut at `cuts`, joined. */
function streamed(body: Buffer, cuts: readonly number[]): Buffer {
  const stream = scrubber.start();
  const out: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts, body.length]) {
    out.push(stream.write(body.subarray(at, cut)));
    at = cut;
  }
  out.push(stream.end());
  return Buffer.concat(out);
}

describe('CredentialScrubber', () => {
  it.each(cases)('%s: whole', (_, echoed, expected) => {
    expect(scrubber.scrub(Buffer.from(echoed)).toString()).toBe(expected);
  });

  it.each(cases)('%s: split in two at every offset', (_, echoed, expected) => {
    const body = Buffer.from(`head ${echoed} tail`);
    for (let cut = 0; cut <= body.length; cut++) {
      expect(streamed(body, [cut]).toString(), `cut at ${cut}`).toBe(`head ${expected} tail`);
    }
  });

  it('one byte at a time, and in 3-byte pieces', () => {
    const body = Buffer.from(`a${VALUE}b${encodeURIComponent(VALUE)}c`);
    const every = (n: number) =>
      Array.from({ length: Math.floor(body.length / n) }, (_, i) => (i + 1) * n);
    expect(streamed(body, every(1)).toString()).toBe(`a${SENTINEL}b${SENTINEL}c`);
    expect(streamed(body, every(3)).toString()).toBe(`a${SENTINEL}b${SENTINEL}c`);
  });

  it('holds back only a tail that could still become a value, never more than carry', () => {
    const stream = scrubber.start();
    const body = Buffer.alloc(10_000, 0x61);
    expect(stream.write(body)).toEqual(body);
    const start = Buffer.from(VALUE.slice(0, 5));
    const out = stream.write(Buffer.concat([Buffer.from('x\n'), start]));
    expect(out.toString()).toBe('x\n');
    expect(stream.end()).toEqual(start);
  });

  it('a short chunk that begins no value goes at once (a stream that pauses is not held)', () => {
    const stream = scrubber.start();
    expect(stream.write(Buffer.from('short\n')).toString()).toBe('short\n');
    expect(stream.end().length).toBe(0);
  });

  it('header values scrubbed as latin1 bytes, names kept', () => {
    const latin1 = Buffer.from(VALUE).toString('latin1');
    const fields = [
      'X-Echo',
      `Bearer ${latin1}`,
      'Location',
      `/cb?t=${encodeURIComponent(VALUE)}`,
      'X-Plain',
      'nothing',
    ];
    expect(scrubber.headers(fields)).toEqual([
      'X-Echo',
      `Bearer ${SENTINEL}`,
      'Location',
      `/cb?t=${SENTINEL}`,
      'X-Plain',
      'nothing',
    ]);
  });

  it('no credentials: a stream that holds nothing back', () => {
    const none = new CredentialScrubber([]);
    expect(none.carry).toBe(0);
    expect(none.start().write(Buffer.from(VALUE)).toString()).toBe(VALUE);
  });
});

describe('ScrubbedBody', () => {
  /** A sink that takes one chunk, then is full until the test drains it. */
  function sink() {
    const got: Buffer[] = [];
    let waiting: (() => void) | null = null;
    return {
      got,
      send: (chunk: Buffer) => (got.push(chunk), false),
      drained: (then: () => void) => void (waiting = then),
      failed: (err: Error) => {
        throw err;
      },
      drain: () => {
        const then = waiting;
        waiting = null;
        then?.();
        return then !== null;
      },
      get full() {
        return waiting !== null;
      },
    };
  }

  it('gzip: decoded and scrubbed, pausing while the agent is full, all of it at the end', async () => {
    const plain = Buffer.from(`${'x'.repeat(1_000)}${VALUE}`.repeat(2_000));
    const out = sink();
    const body = new ScrubbedBody(scrubber, 'gzip', out);
    expect(body.write(gzipSync(plain), null)).toBe(true);
    const ended = new Promise<void>((r) => body.end(r));
    let finished = false;
    void ended.then(() => (finished = true));
    while (!finished) {
      await waitFor(() => out.full || finished, 5_000, 'the decoder to fill the agent');
      // Full: nothing more is sent until drained.
      const sent = out.got.length;
      await new Promise<void>((r) => setImmediate(r));
      expect(out.got.length).toBe(sent);
      out.drain();
    }
    const text = Buffer.concat(out.got).toString();
    expect(text).toBe(`${'x'.repeat(1_000)}${SENTINEL}`.repeat(2_000));
    expect(out.got.length).toBeGreaterThan(1);
  });

  it('identity: a full agent makes the upstream wait, and resumes it on drain', () => {
    const out = sink();
    const body = new ScrubbedBody(scrubber, null, out);
    let resumed = 0;
    expect(body.write(Buffer.alloc(1_000, 0x61), () => resumed++)).toBe(false);
    expect(out.drain()).toBe(true);
    expect(resumed).toBe(1);
  });

  it('scrubbedHead: values scrubbed, Content-Length dropped, one coding undone, others refused', () => {
    // Field values are latin1 strings of their bytes, as Node reads them.
    const echo = Buffer.from(VALUE).toString('latin1');
    const fields = ['Content-Length', '10', 'Content-Encoding', 'gzip', 'X-Echo', echo];
    expect(scrubbedHead(scrubber, fields)).toEqual({
      fields: ['X-Echo', SENTINEL],
      coding: 'gzip',
    });
    expect(scrubbedHead(scrubber, ['content-encoding', 'zstd'])).toEqual({ unsupported: 'zstd' });
    expect(scrubbedHead(scrubber, ['content-encoding', 'gzip', 'content-encoding', 'br'])).toEqual({
      unsupported: 'gzip, br',
    });
  });
});
