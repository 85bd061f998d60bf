import { readFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import type { AgentOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { dirname } from 'node:path';
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/journal/records.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { startS3Stub } from '../helpers/s3-stub.js';
import type { AwsKey } from '../helpers/sigv4-verify.js';
import { REAL_PAIR as REAL, SENTINEL_PAIR as SENTINEL } from '../helpers/sigv4-verify.js';
import { interceptConfig, makeLocalCa } from '../helpers/tls.js';
import { textUnder } from '../helpers/tmp.js';

/**
 * AWS SigV4 through trajgate: the AWS SDK signs with the sentinel pair (what `trajgate env`
 * gives the agent), trajgate checks that signature and signs again with the real pair, and a
 * local S3-compatible stub that checks SigV4 with the real pair (by @smithy/signature-v4, not
 * trajgate's code) serves it. No output of trajgate holds the real key id or secret.
 */
const ca = makeLocalCa();
const stub = await startS3Stub(REAL);
const HOST = `127.0.0.1:${stub.port}`;
const gateways = gatewayPerTest({});

const start = (): Promise<TestGateway> =>
  gateways.start({
    ...interceptConfig({ ca, intercept: [HOST], allow: [HOST], ports: [stub.port] }),
    credentials: [
      {
        name: 'aws',
        value: REAL.secretAccessKey,
        sentinel: SENTINEL.secretAccessKey,
        sigv4: {
          accessKeyId: REAL.accessKeyId,
          sentinelKeyId: SENTINEL.accessKeyId,
          regions: ['us-east-1'],
          services: ['s3'],
        },
        hosts: [HOST],
      },
    ],
  });

/** An HTTPS agent whose connections are CONNECT tunnels through the proxy (as HTTPS_PROXY does). */
class TunnelAgent extends HttpsAgent {
  constructor(
    private readonly proxyPort: number,
    options: AgentOptions,
  ) {
    super(options);
  }

  override createConnection(
    options: { host?: string; port?: number; servername?: string },
    done: (err: Error | null, socket?: Duplex) => void,
  ): undefined {
    const connect = httpRequest({
      host: '127.0.0.1',
      port: this.proxyPort,
      method: 'CONNECT',
      path: `${options.host}:${options.port}`,
    });
    connect.once('connect', (res, socket) => {
      if (res.statusCode !== 200) return done(new Error(`CONNECT answered ${res.statusCode}`));
      const host = options.host ?? '';
      // An IP is no server name (RFC 6066 § 3): checked against the certificate as `host`.
      const name = isIP(host) === 0 ? { servername: options.servername ?? host } : {};
      done(null, tlsConnect({ socket, host, ...name, ca: this.options.ca }));
    });
    connect.once('error', done);
    connect.end();
    return undefined;
  }
}

const client = (g: TestGateway, key: AwsKey) =>
  new S3Client({
    endpoint: `https://${HOST}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: key,
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({
      httpsAgent: new TunnelAgent(g.gw.proxy.port, { ca: readFileSync(ca.certPath) }),
    }),
  });

/** Every file trajgate wrote beside its journal (captures, keys), as text. */
const everything = (g: TestGateway): string => textUnder(dirname(g.journalPath));

describe('@aws-sdk/client-s3 signing with the sentinel pair', () => {
  it('puts, gets and lists: the stub sees only the real pair, trajgate only the sentinels', async () => {
    const g = await start();
    const s3 = client(g, SENTINEL);
    const seen = stub.seen.length;
    await s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'notes/a b.txt', Body: 'hello s3' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'notes/a b.txt' }));
    expect(await got.Body?.transformToString()).toBe('hello s3');
    const list = await s3.send(new ListObjectsV2Command({ Bucket: 'b', Prefix: 'notes/' }));
    expect(list.Contents?.map((c) => c.Key)).toEqual(['notes/a b.txt']);
    const arrived = stub.seen.slice(seen);
    expect(arrived.length).toBe(3);
    for (const { request, problem } of arrived) {
      expect(problem).toBeNull();
      expect(JSON.stringify(request.rawHeaders)).not.toContain(SENTINEL.accessKeyId);
    }
    const events = g.records().filter((r): r is EventRecord => r.type === 'event');
    expect(events.map((e) => e.credentials)).toEqual([['aws'], ['aws'], ['aws']]);
    const out = everything(g);
    expect(out).not.toContain(REAL.accessKeyId);
    expect(out).not.toContain(REAL.secretAccessKey);
  });

  it('a signature the sentinel secret does not verify is refused before the stub', async () => {
    const g = await start();
    const seen = stub.seen.length;
    const wrong = { ...SENTINEL, secretAccessKey: 'tgs_aws_ffffffffffffffffffffffff00000000' };
    const err = await client(g, wrong)
      .send(new GetObjectCommand({ Bucket: 'b', Key: 'x' }))
      .catch((e: unknown) => e as { $metadata?: { httpStatusCode?: number } });
    expect(err).toMatchObject({ $metadata: { httpStatusCode: 403 } });
    expect(stub.seen.length).toBe(seen);
    const event = g.records().find((r): r is EventRecord => r.type === 'event');
    expect(event?.denied).toMatch(/^credential aws: sentinel AWS key id TGSAKIA0123456789AB: /);
  });
});
