import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll } from 'vitest';
import { readBody } from '../../src/http/body.js';
import type { ArrivedRequest, AwsKey } from './sigv4-verify.js';
import { queryOf, sigV4Problem } from './sigv4-verify.js';
import { fixture } from './tls.js';

/**
 * A minimal S3-compatible HTTPS server on 127.0.0.1 (port 0, the test server certificate): path
 * style PutObject, GetObject and ListObjectsV2 in memory, each request's SigV4 checked with one
 * key pair (sigv4-verify.ts); anything else signed is answered 403 SignatureDoesNotMatch.
 */

export interface S3Stub {
  readonly port: number;
  /** `https://127.0.0.1:PORT`: the endpoint for a path-style client. */
  readonly endpoint: string;
  /** `bucket/key` → bytes. */
  readonly objects: Map<string, Buffer>;
  /** Every request as it arrived, and what the signature check said (null: it verified). */
  readonly seen: { readonly request: ArrivedRequest; readonly problem: string | null }[];
}

const xml = (text: string): string => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

function answer(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  type = 'application/xml',
): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const error = (res: ServerResponse, status: number, code: string, message: string): void =>
  answer(
    res,
    status,
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xml(message)}</Message></Error>`,
  );

/** The body of an `aws-chunked` upload (STREAMING-UNSIGNED-PAYLOAD-TRAILER): its data only. */
function unchunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.subarray(at, eol).toString('latin1').split(';')[0] as string, 16);
    if (eol < 0 || !(size > 0)) return Buffer.concat(parts);
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

function listing(stub: S3Stub, bucket: string, prefix: string): string {
  const keys = [...stub.objects.keys()]
    .filter((k) => k.startsWith(`${bucket}/${prefix}`))
    .map((k) => k.slice(bucket.length + 1))
    .sort();
  const contents = keys.map((k) => {
    const data = stub.objects.get(`${bucket}/${k}`) as Buffer;
    const etag = createHash('md5').update(data).digest('hex');
    return `<Contents><Key>${xml(k)}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;${etag}&quot;</ETag><Size>${data.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${xml(bucket)}</Name><Prefix>${xml(prefix)}</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents.join('')}</ListBucketResult>`;
}

function serve(stub: S3Stub, req: ArrivedRequest, res: ServerResponse): void {
  const [target, rawQuery] = req.path.split('?') as [string, string | undefined];
  const [bucket, ...rest] = target.slice(1).split('/').map(decodeURIComponent);
  const key = rest.join('/');
  const query = queryOf(req.path);
  if (bucket === undefined || bucket === '')
    return error(res, 400, 'InvalidBucketName', 'path-style requests only');
  const declared = headerOf(req, 'x-amz-content-sha256') ?? '';
  const hash = createHash('sha256').update(req.body).digest('hex');
  if (/^[0-9a-f]{64}$/.test(declared) && declared !== hash)
    return error(res, 400, 'XAmzContentSHA256Mismatch', 'the body is not what was signed');
  if (req.method === 'PUT' && key !== '') {
    const chunked = /aws-chunked/.test(String(headerOf(req, 'content-encoding')));
    const data = chunked ? unchunked(req.body) : req.body;
    stub.objects.set(`${bucket}/${key}`, data);
    res.setHeader('etag', `"${createHash('md5').update(data).digest('hex')}"`);
    return answer(res, 200, '');
  }
  if (req.method === 'GET' && key !== '') {
    const data = stub.objects.get(`${bucket}/${key}`);
    if (data === undefined)
      return error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
    return answer(res, 200, data, 'application/octet-stream');
  }
  if (req.method === 'GET' && query['list-type'] === '2')
    return answer(res, 200, listing(stub, bucket, String(query.prefix ?? '')));
  return error(
    res,
    501,
    'NotImplemented',
    `${req.method} ${target}${rawQuery === undefined ? '' : '?…'}`,
  );
}

const headerOf = (req: ArrivedRequest, name: string): string | undefined =>
  req.rawHeaders.find((_, i) => i % 2 === 1 && req.rawHeaders[i - 1]?.toLowerCase() === name);

/** Starts a stub that accepts requests signed by `key` only; closed after the test file. */
export async function startS3Stub(key: AwsKey): Promise<S3Stub> {
  const server = createServer({
    cert: readFileSync(fixture('server.pem')),
    key: readFileSync(fixture('server-key.pem')),
  });
  const stub = { port: 0, endpoint: '', objects: new Map(), seen: [] } as {
    -readonly [K in keyof S3Stub]: S3Stub[K];
  };
  server.on('request', (incoming: IncomingMessage, res: ServerResponse) => {
    const answered = async () => {
      const request = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        rawHeaders: incoming.rawHeaders,
        body: await readBody(incoming, 1 << 24),
      };
      const problem = await sigV4Problem(request, key);
      stub.seen.push({ request, problem });
      if (problem !== null) return error(res, 403, 'SignatureDoesNotMatch', problem);
      serve(stub, request, res);
    };
    answered().catch((err: unknown) => {
      if (!res.headersSent) error(res, 400, 'InvalidRequest', String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.port = (server.address() as AddressInfo).port;
  stub.endpoint = `https://127.0.0.1:${stub.port}`;
  afterAll(async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });
  return stub;
}

/** The AWS SDK's S3 client on `endpoint`: path style, one attempt, trusting the test CA only. */
export function s3Client(endpoint: string, credentials: AwsKey): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({
      httpsAgent: new Agent({ ca: readFileSync(fixture('ca.pem')) }),
    }),
  });
}
