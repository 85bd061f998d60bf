import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { CredentialScrubber } from '../../src/action/credential-scrub.js';
import { swapCredentials } from '../../src/action/credential-swap.js';
import { Egress } from '../../src/action/egress.js';
import { Flow } from '../../src/action/flows.js';
import type { Forwarded } from '../../src/action/response-relay.js';
import { Forwarder } from '../../src/action/forward.js';
import { upstreamRequestHeaders } from '../../src/action/headers.js';
import { exchange } from '../helpers/raw.js';
import { readBody } from '../helpers/upstream.js';

const SENTINEL = 'tgs_github_0123456789abcdef';
const VALUE = 'ghp_RealValue/0123456789+abc';
const credential = {
  name: 'github',
  sentinel: SENTINEL,
  value: VALUE,
  header: 'Authorization',
  scheme: 'Bearer',
};
const credentials = [credential];
const scrub = new CredentialScrubber(credentials);

/** What the upstream received, one per request; it answers by the path with the value echoed. */
const seen: { headers: IncomingMessage['headers']; body: string }[] = [];
const upstream = createServer((req, res) => {
  void readBody(req).then(({ raw }) => {
    seen.push({ headers: req.headers, body: raw });
    const echo = Buffer.from(
      JSON.stringify({ auth: req.headers.authorization, body: raw, url: req.url }),
    );
    if (req.url === '/gzip') {
      const zipped = gzipSync(Buffer.concat([echo, Buffer.from(` ${VALUE}`.repeat(2_000))]));
      res.writeHead(200, {
        'content-encoding': 'gzip',
        'content-length': zipped.length,
        'x-echo': VALUE,
      });
      return res.end(zipped);
    }
    if (req.url === '/zstd') {
      res.writeHead(200, { 'content-encoding': 'zstd', 'content-length': 4 });
      return res.end('zstd');
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': echo.length });
    res.end(echo);
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamPort = (upstream.address() as AddressInfo).port;

const forwarder = new Forwarder(
  { connectTimeout: 5_000, upstreamTimeout: 30_000, bodyTimeout: 30_000 },
  new Egress({ allowPrivate: [], timeoutMs: 5_000 }),
  () => [],
);
const outcomes: Forwarded[] = [];
/** The gateway's part, reduced to the forward: the body read, swapped, sent prepared. */
const front = createServer((req: IncomingMessage, res: ServerResponse) => {
  void readBody(req).then(async ({ raw }) => {
    const url = new URL(`http://127.0.0.1:${upstreamPort}${req.url}`);
    const swapped = swapCredentials(
      {
        path: req.url!,
        rawHeaders: upstreamRequestHeaders(req.rawHeaders, url.host),
        body: raw === '' ? null : Buffer.from(raw),
      },
      credentials,
      1 << 20,
    );
    if (!swapped.ok) return res.writeHead(403).end(swapped.reason);
    const flow = new Flow(
      {
        session: 's',
        kind: 'request',
        target: url.href,
        rid: 1,
        event: null,
        approved: false,
        expiresAt: null,
        dial: null,
      },
      null,
      () => {},
    );
    outcomes.push(
      await forwarder.forward(req, res, url, '127.0.0.1', undefined, flow, {
        prepared: { ...swapped, scrub },
      }),
    );
  });
});
await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
const frontPort = (front.address() as AddressInfo).port;
afterAll(async () => {
  await forwarder.close();
  await Promise.all([upstream, front].map((s) => new Promise((r) => s.close(r))));
});

/** An HTTP/1.1 request on a raw socket: the answer as framed on the wire. */
const send = (path: string, headers: string, body = '') =>
  exchange(
    frontPort,
    `POST ${path} HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );

/** A chunked body's data (RFC 9112 § 7.1), asserting its framing: sizes, CRLFs, the last chunk. */
function unchunk(framed: string): string {
  let data = '';
  let at = 0;
  for (;;) {
    const eol = framed.indexOf('\r\n', at);
    expect(eol, 'a chunk-size line').toBeGreaterThan(at);
    const size = parseInt(framed.slice(at, eol), 16);
    expect(Number.isNaN(size)).toBe(false);
    if (size === 0) {
      expect(framed.slice(eol)).toBe('\r\n\r\n');
      return data;
    }
    data += framed.slice(eol + 2, eol + 2 + size);
    expect(framed.slice(eol + 2 + size, eol + 4 + size)).toBe('\r\n');
    at = eol + 4 + size;
  }
}

describe('Forwarder with a prepared request and a scrub', () => {
  it('the upstream gets the value; the agent the sentinel, chunked', async () => {
    const body = JSON.stringify({ token: SENTINEL });
    const answer = await send('/echo', `Authorization: Bearer ${SENTINEL}\r\n`, body);
    const got = seen.at(-1)!;
    expect(got.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(JSON.parse(got.body)).toEqual({ token: VALUE });
    expect(got.headers['content-length']).toBe(String(Buffer.byteLength(got.body)));
    expect(answer.status).toBe(200);
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
    const echoed = JSON.parse(unchunk(answer.body));
    expect(echoed).toEqual({
      auth: `Bearer ${SENTINEL}`,
      body: JSON.stringify({ token: SENTINEL }),
      url: '/echo',
    });
    expect(answer.text).not.toContain(VALUE);
  });

  it('placed where the agent sent no Authorization; the outcome counts the bytes sent', async () => {
    const answer = await send('/echo', '');
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(JSON.parse(unchunk(answer.body)).auth).toBe(`Bearer ${SENTINEL}`);
    expect(outcomes.at(-1)).toMatchObject({
      status: 200,
      bytesDown: Buffer.byteLength(unchunk(answer.body)),
    });
  });

  it('a gzip answer: decoded, scrubbed, sent without Content-Encoding, headers scrubbed', async () => {
    const answer = await send('/gzip', `Authorization: Bearer ${SENTINEL}\r\n`);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(answer.headers['x-echo']).toBe(SENTINEL);
    const text = unchunk(answer.body);
    expect(text).not.toContain(VALUE);
    expect(text.endsWith(` ${SENTINEL}`.repeat(2_000))).toBe(true);
    expect(JSON.parse(text.slice(0, text.indexOf('}') + 1)).auth).toBe(`Bearer ${SENTINEL}`);
    expect(answer.text).not.toContain(VALUE);
  });

  it('an answer in a coding it cannot decode: 502, nothing of it passed on', async () => {
    const answer = await send('/zstd', '');
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/Content-Encoding "zstd", which trajgate cannot decode/);
    expect(outcomes.at(-1)).toMatchObject({ status: 502 });
  });
});
