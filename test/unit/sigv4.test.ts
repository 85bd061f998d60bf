import { createHash } from 'node:crypto';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import type { SigV4Key, SigV4Request, SigV4Result } from '../../src/action/sigv4.js';
import { resignSigV4 } from '../../src/action/sigv4.js';
import type { AwsKey } from '../helpers/sigv4-verify.js';
import {
  REAL_PAIR as REAL,
  SENTINEL_PAIR as SENTINEL,
  sigV4Problem,
  TEST_KEY as KEY,
} from '../helpers/sigv4-verify.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const HOST = 'tests.s3.us-east-1.amazonaws.com';
const MINUTE = 60_000;

/** A request before signing; the host header is added unless `host` is false. */
interface Draft {
  readonly method: string;
  readonly path: string;
  readonly query?: Record<string, string | string[]>;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
}

interface How {
  readonly service?: string;
  readonly region?: string;
  /** When it is signed (default NOW). */
  readonly at?: number;
  readonly host?: boolean;
}

const signer = (key: AwsKey, how: How) =>
  new SignatureV4({
    credentials: key,
    region: how.region ?? 'us-east-1',
    service: how.service ?? 's3',
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: (how.service ?? 's3') !== 's3',
    applyChecksum: false,
  });

const smithyRequest = (draft: Draft, how: How) => ({
  protocol: 'https:',
  hostname: HOST,
  method: draft.method,
  path: draft.path,
  query: draft.query ?? {},
  headers: { ...(how.host === false ? {} : { host: HOST }), ...draft.headers },
  body: draft.body,
});

/** RFC 3986 encoding, as an HTTP client puts a query on the wire (in the order given). */
const enc = (s: string) =>
  encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/** The request as the gateway receives it, with an unsigned User-Agent as clients add. */
function wire(req: {
  method: string;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}): SigV4Request {
  const query = Object.entries(req.query ?? {})
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v ?? '']).map((x) => `${enc(k)}=${enc(x)}`))
    .join('&');
  return {
    method: req.method,
    path: query === '' ? req.path : `${req.path}?${query}`,
    rawHeaders: [...Object.entries(req.headers).flat(), 'User-Agent', 'test-agent/1.0'],
    body: (req.body as Buffer | undefined) ?? Buffer.alloc(0),
  };
}

/** Signed in the Authorization header by smithy (the AWS SDK's signer) with `key`. */
async function signed(draft: Draft, key: AwsKey, how: How = {}): Promise<SigV4Request> {
  const req = await signer(key, how).sign(smithyRequest(draft, how), {
    signingDate: new Date(how.at ?? NOW),
  });
  return wire(req);
}

/** A presigned URL made by smithy as the S3 presigner does (the payload is not signed). */
async function presigned(draft: Draft, key: AwsKey, expiresIn: number): Promise<SigV4Request> {
  const none = new Set(['x-amz-content-sha256']);
  const base = smithyRequest(draft, {});
  const req = await signer(key, {}).presign(
    { ...base, headers: { ...base.headers, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
    { signingDate: new Date(NOW), expiresIn, unsignableHeaders: none, unhoistableHeaders: none },
  );
  const { 'x-amz-content-sha256': _, ...headers } = req.headers;
  return wire({ ...req, headers });
}

const outcomes: SigV4Result[] = [];
const resign = (req: SigV4Request, key: SigV4Key = KEY, now = NOW): SigV4Result => {
  const out = resignSigV4(req, key, now);
  outcomes.push(out);
  return out;
};

/**
 * Signed by the agent with the sentinel pair, signed again: the result is the request the SDK
 * makes with the real pair, byte for byte, and it verifies under the real pair.
 */
async function expectResigned(draft: Draft, how: How = {}, now = NOW): Promise<void> {
  const out = resign(await signed(draft, SENTINEL, how), KEY, now);
  const real = await signed(draft, REAL, how);
  expect(out).toEqual({ ok: true, resigned: true, path: real.path, rawHeaders: real.rawHeaders });
  const arrived = { ...real, ...(out as { path: string; rawHeaders: string[] }) };
  expect(
    await sigV4Problem({ ...arrived, body: real.body ?? Buffer.alloc(0) }, REAL, how.service),
  ).toBeNull();
}

function expectRefused(out: SigV4Result, why: string): void {
  expect(out).toEqual({ ok: false, reason: expect.stringContaining(why) });
}

describe('resignSigV4', () => {
  it('signs a GET with a query again with the real pair, unsigned headers untouched', async () => {
    await expectResigned({
      method: 'GET',
      path: '/tests/',
      query: {
        'list-type': '2',
        prefix: 'photos/2026 q1',
        'start-after': 'a+b=c&d',
        tag: ['b', 'a'],
      },
    });
  });

  it('PUT with the body hash in x-amz-content-sha256, checked against the body', async () => {
    const body = Buffer.from('{"hello":"world"}\n');
    const hash = createHash('sha256').update(body).digest('hex');
    const draft = {
      method: 'PUT',
      path: '/tests/data.json',
      headers: { 'content-type': 'application/json', 'x-amz-content-sha256': hash },
      body,
    };
    await expectResigned(draft);
    const agent = await signed(draft, SENTINEL);
    expectRefused(
      resign({ ...agent, body: Buffer.from('{"hello":"other"}\n') }),
      'does not match the body',
    );
    // Not read: the hash is signed as declared, and the upstream checks the body against it.
    expect(resign({ ...agent, body: null })).toMatchObject({ ok: true, resigned: true });
  });

  it('UNSIGNED-PAYLOAD and STREAMING-UNSIGNED-PAYLOAD-TRAILER, with the body not read', async () => {
    for (const payload of ['UNSIGNED-PAYLOAD', 'STREAMING-UNSIGNED-PAYLOAD-TRAILER']) {
      const draft = {
        method: 'PUT',
        path: '/tests/big.bin',
        headers: { 'x-amz-content-sha256': payload },
      };
      await expectResigned(draft);
      expect(resign({ ...(await signed(draft, SENTINEL)), body: null })).toMatchObject({
        ok: true,
      });
    }
  });

  it('a presigned URL: X-Amz-Credential and X-Amz-Signature replaced, good until it expires', async () => {
    const draft = {
      method: 'GET',
      path: '/tests/report%20final.pdf',
      query: { 'x-id': 'GetObject' },
    };
    const agent = await presigned(draft, SENTINEL, 3600);
    const real = await presigned(draft, REAL, 3600);
    // Half an hour on: a presigned URL lives for its X-Amz-Expires, not 15 minutes.
    const out = resign(agent, KEY, NOW + 30 * MINUTE);
    expect(out).toEqual({ ok: true, resigned: true, path: real.path, rawHeaders: real.rawHeaders });
    expect(real.path).toContain(`X-Amz-Credential=${REAL.accessKeyId}%2F20260115`);
    expect(await sigV4Problem({ ...real, body: Buffer.alloc(0) }, REAL)).toBeNull();
    expectRefused(
      resign(agent, KEY, NOW + 61 * MINUTE),
      'the presigned URL expired at 2026-01-15T13:00:00.000Z',
    );
    expectRefused(resign(agent, KEY, NOW - 16 * MINUTE), 'more than 15 minutes from now');
  });

  it('an S3 path with spaces, unicode, // and ./ is signed as sent', async () => {
    await expectResigned({
      method: 'GET',
      path: '/tests/my%20photos/caf%C3%A9%20%E2%9C%93%2Bplus.txt',
    });
    await expectResigned({ method: 'GET', path: '/tests/a//b/./c' });
  });

  it('other services: the path without dot segments, encoded twice', async () => {
    const body = Buffer.from('Action=SendMessage&MessageBody=hi%20there');
    await expectResigned(
      {
        method: 'POST',
        path: '/prod/a%20b/./c/../d%2Fe//f',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      },
      { service: 'execute-api', region: 'eu-west-1' },
    );
    const agent = await signed({ method: 'POST', path: '/prod/x', body }, SENTINEL, {
      service: 'execute-api',
    });
    expectRefused(resign({ ...agent, body: null }), 'the body was not read');
  });

  it('refuses a signature that does not verify with the sentinel secret', async () => {
    const draft = { method: 'GET', path: '/tests/k', headers: { 'x-amz-meta-note': 'one' } };
    const other = { ...SENTINEL, secretAccessKey: 'tgs_aws_ffffffffffffffffffffffffffffffff' };
    const why = 'the signature does not verify with the sentinel secret';
    expectRefused(resign(await signed(draft, other)), why);
    const agent = await signed(draft, SENTINEL);
    expectRefused(resign({ ...agent, path: '/tests/other' }), why);
    const note = agent.rawHeaders.indexOf('one');
    expectRefused(resign({ ...agent, rawHeaders: agent.rawHeaders.with(note, 'two') }), why);
  });

  it('refuses a date more than 15 minutes from now, either way', async () => {
    const draft = { method: 'GET', path: '/tests/k' };
    await expectResigned(draft, { at: NOW - 14 * MINUTE });
    expectRefused(
      resign(await signed(draft, SENTINEL, { at: NOW - 16 * MINUTE })),
      'more than 15 minutes ago',
    );
    expectRefused(
      resign(await signed(draft, SENTINEL, { at: NOW + 16 * MINUTE })),
      'more than 15 minutes from now',
    );
  });

  it('refuses a region or a service that is not allowed', async () => {
    const draft = { method: 'GET', path: '/tests/k' };
    const agent = await signed(draft, SENTINEL);
    expectRefused(
      resign(agent, { ...KEY, regions: ['eu-west-1'] }),
      'region us-east-1 is not allowed (eu-west-1)',
    );
    expect(
      resign(agent, { ...KEY, regions: ['eu-west-1', 'us-east-1'], services: ['s3'] }),
    ).toMatchObject({ ok: true });
    const sqs = await signed({ method: 'POST', path: '/', body: Buffer.from('x') }, SENTINEL, {
      service: 'sqs',
    });
    expectRefused(resign(sqs, { ...KEY, services: ['s3'] }), 'service sqs is not allowed (s3)');
  });

  it('refuses a request whose host is not signed', async () => {
    const agent = await signed({ method: 'GET', path: '/tests/k' }, SENTINEL, { host: false });
    expectRefused(
      resign({ ...agent, rawHeaders: ['Host', HOST, ...agent.rawHeaders] }),
      'host is not a signed header',
    );
  });

  it('refuses chunk-signed (streaming) payloads: not supported yet', async () => {
    for (const payload of [
      'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER',
    ]) {
      const draft = {
        method: 'PUT',
        path: '/tests/k',
        headers: { 'content-encoding': 'aws-chunked', 'x-amz-content-sha256': payload },
      };
      expectRefused(
        resign(await signed(draft, SENTINEL)),
        `${payload}: chunk signatures are not supported yet`,
      );
    }
  });

  it('leaves a request that does not use the sentinel key id as it came', async () => {
    const real = await signed({ method: 'GET', path: '/tests/k' }, REAL);
    expect(resign(real)).toEqual({
      ok: true,
      resigned: false,
      path: real.path,
      rawHeaders: real.rawHeaders,
    });
    const plain = { method: 'GET', path: '/', rawHeaders: ['Host', HOST], body: null };
    expect(resign(plain)).toEqual({
      ok: true,
      resigned: false,
      path: '/',
      rawHeaders: ['Host', HOST],
    });
  });

  it('refuses the sentinel key id anywhere but in a SigV4 signature', async () => {
    const id = SENTINEL.accessKeyId;
    const get = (path: string, ...headers: string[]) => ({
      method: 'GET',
      path,
      rawHeaders: ['Host', HOST, ...headers],
      body: null,
    });
    expectRefused(
      resign(get('/tests/k', 'Authorization', `AWS ${id}:frJIUN8DYpKDtOLCwo//yllqDzg=`)),
      'is not AWS4-HMAC-SHA256',
    );
    expectRefused(
      resign(get(`/tests/k?AWSAccessKeyId=${id}&Expires=1767000000&Signature=abc`)),
      'carries no SigV4 signature',
    );
    for (const credential of [`${id}/2026`, `${id}/20260115/<us-east-1>/s3/aws4_request`])
      expectRefused(
        resign(
          get(
            '/tests/k',
            'Authorization',
            `AWS4-HMAC-SHA256 Credential=${credential}, SignedHeaders=host, Signature=00`,
          ),
        ),
        'the credential is not KEYID/YYYYMMDD/REGION/SERVICE/aws4_request',
      );
    expectRefused(resign(get('/tests/%54GSAKIA0123456789AB')), 'carries no SigV4 signature');
    const agent = await signed({ method: 'GET', path: '/tests/k' }, SENTINEL);
    const both = await presigned({ method: 'GET', path: '/tests/k' }, SENTINEL, 60);
    expectRefused(
      resign({ ...agent, path: both.path }),
      'signed both in the Authorization header and in the query',
    );
    expectRefused(
      resign({
        ...agent,
        rawHeaders: [...agent.rawHeaders, 'X-Amz-Security-Token', 'token0123456789abcdef'],
      }),
      'a session token does not go with a sentinel key',
    );
    expectRefused(
      resign({ ...agent, rawHeaders: [...agent.rawHeaders, 'Authorization', 'Bearer x'] }),
      'more than one Authorization header',
    );
    const sigv4a = agent.rawHeaders.map((v) =>
      v.replace('AWS4-HMAC-SHA256', 'AWS4-ECDSA-P256-SHA256'),
    );
    expectRefused(resign({ ...agent, rawHeaders: sigv4a }), 'SigV4a and SigV2 are not supported');
  });

  it('never quotes the real key id or secret in a reason', () => {
    const reasons = outcomes.flatMap((o) => (o.ok ? [] : [o.reason]));
    expect(reasons.length).toBeGreaterThan(15);
    for (const reason of reasons) {
      expect(reason).not.toContain(REAL.accessKeyId);
      expect(reason).not.toContain(REAL.secretAccessKey);
      expect(reason).not.toContain(SENTINEL.secretAccessKey);
    }
  });
});
