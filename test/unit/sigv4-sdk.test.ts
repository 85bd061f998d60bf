import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import type { SigV4Key } from '../../src/action/sigv4.js';
import { resignSigV4 } from '../../src/action/sigv4.js';
import { readBody } from '../../src/http/body.js';
import { s3Client, startS3Stub } from '../helpers/s3-stub.js';
import { REAL_PAIR as REAL, SENTINEL_PAIR as SENTINEL, TEST_KEY } from '../helpers/sigv4-verify.js';
import { fixture } from '../helpers/tls.js';

const KEY: SigV4Key = { ...TEST_KEY, regions: ['us-east-1'], services: ['s3'] };
const CA = readFileSync(fixture('ca.pem'));
const LIMIT = 1 << 20;

/**
 * What the gateway will do on an intercepted flow, in miniature: each request is signed again
 * by resignSigV4 and sent on to `upstream`, or answered 403 with the reason.
 */
async function startResigner(upstream: number): Promise<{ endpoint: string; reasons: string[] }> {
  const reasons: string[] = [];
  const server = createServer(
    { cert: readFileSync(fixture('server.pem')), key: readFileSync(fixture('server-key.pem')) },
    (req, res) => {
      void readBody(req, LIMIT).then((body) => {
        const out = resignSigV4(
          { method: req.method ?? '', path: req.url ?? '', rawHeaders: req.rawHeaders, body },
          KEY,
          Date.now(),
        );
        if (!out.ok) {
          reasons.push(out.reason);
          res.writeHead(403, { 'content-type': 'application/xml' });
          return res.end(
            `<Error><Code>AccessDenied</Code><Message>${out.reason}</Message></Error>`,
          );
        }
        const headers: Record<string, string> = {};
        for (let i = 0; i < out.rawHeaders.length; i += 2)
          if ((out.rawHeaders[i] as string).toLowerCase() !== 'connection')
            headers[out.rawHeaders[i] as string] = out.rawHeaders[i + 1] as string;
        const forward = request(
          {
            host: '127.0.0.1',
            port: upstream,
            method: req.method,
            path: out.path,
            headers,
            ca: CA,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forward.end(body);
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });
  return { endpoint: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, reasons };
}

describe('@aws-sdk/client-s3 signing with the sentinel pair, signed again on the way', () => {
  it('puts, gets and lists on an S3 that accepts the real pair only', async () => {
    const stub = await startS3Stub(REAL);
    const relay = await startResigner(stub.port);
    const s3 = s3Client(relay.endpoint, SENTINEL);
    await s3.send(new PutObjectCommand({ Bucket: 'tests', Key: 'notes/a b ✓.txt', Body: 'one' }));
    // A stream goes aws-chunked with an unsigned checksum trailer.
    await s3.send(
      new PutObjectCommand({
        Bucket: 'tests',
        Key: 'notes/streamed',
        Body: Readable.from(['t', 'wo']),
        ContentLength: 3,
      }),
    );
    const got = await s3.send(new GetObjectCommand({ Bucket: 'tests', Key: 'notes/a b ✓.txt' }));
    expect(await got.Body?.transformToString()).toBe('one');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'tests', Prefix: 'notes/' }));
    expect(listed.Contents?.map((c) => c.Key)).toEqual(['notes/a b ✓.txt', 'notes/streamed']);
    expect(stub.objects.get('tests/notes/streamed')?.toString()).toBe('two');
    const streamed = stub.seen[1]?.request.rawHeaders ?? [];
    expect(streamed[streamed.indexOf('x-amz-content-sha256') + 1]).toBe(
      'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    );
    expect(relay.reasons).toEqual([]);
    expect(stub.seen.map((s) => s.problem)).toEqual([null, null, null, null]);
    for (const { request: seen } of stub.seen) {
      const text = seen.rawHeaders.join('\n') + seen.path;
      expect(text).toContain(`Credential=${REAL.accessKeyId}/`);
      expect(text).not.toContain(SENTINEL.accessKeyId);
    }
    s3.destroy();
  });

  it('refuses a request signed with a wrong sentinel secret; nothing reaches S3', async () => {
    const stub = await startS3Stub(REAL);
    const relay = await startResigner(stub.port);
    const s3 = s3Client(relay.endpoint, {
      ...SENTINEL,
      secretAccessKey: 'tgs_aws_wrong0123456789abcdef012345',
    });
    const err = await s3.send(new PutObjectCommand({ Bucket: 'tests', Key: 'k', Body: 'x' })).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(S3ServiceException);
    expect((err as S3ServiceException).name).toBe('AccessDenied');
    expect(relay.reasons).toEqual([
      `sentinel AWS key id ${SENTINEL.accessKeyId}: the signature does not verify with the sentinel secret`,
    ]);
    expect(stub.seen).toEqual([]);
    s3.destroy();
  });
});
