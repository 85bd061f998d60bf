import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, get } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { curl } from '../helpers/curl.js';
import { fixture, interceptPerTest, makeLocalCa } from '../helpers/tls.js';

/**
 * The upstream connectors (src/action/upstream-connect.ts): plain sockets read into one reused
 * buffer and copy each read out, so bodies of any size and chunking must arrive whole and in
 * order, through many connections at once; and the connect deadline ends once connected, so an
 * upstream slower to answer than `limits.connectTimeout` (but within `upstreamTimeout`) is
 * waited for, plain and TLS alike.
 */
const BIG = Buffer.alloc(6 * 1024 * 1024);
for (let i = 0; i < BIG.length; i += 4) BIG.writeUInt32BE(i, i);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** GET `url` through the proxy on `proxyPort` (absolute-form, node:http): status and body. */
function viaProxy(proxyPort: number, url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const host = new URL(url).host;
    get(
      { host: '127.0.0.1', port: proxyPort, path: url, headers: { host }, agent: false },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    ).on('error', reject);
  });
}

/** /big: 6 MiB in 1–70 kB writes, each after the last drained; /slow: `ok` after 700 ms. */
function handler(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.url === '/slow') {
    setTimeout(() => res.end('ok'), 700);
    return;
  }
  res.writeHead(200, { 'content-length': BIG.length });
  let at = 0;
  const more = () => {
    while (at < BIG.length) {
      const size = 1 + ((at * 7919) % 70_000);
      const chunk = BIG.subarray(at, at + size);
      at += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    res.end();
  };
  more();
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}

const plain = await listen(createServer(handler));
const tls = await listen(
  createHttpsServer(
    { key: readFileSync(fixture('server-key.pem')), cert: readFileSync(fixture('server.pem')) },
    handler,
  ),
);
const ca = makeLocalCa();
const start = interceptPerTest({
  ca,
  intercept: [`127.0.0.1:${tls}`],
  allow: [`http://127.0.0.1:${plain}/`, `https://127.0.0.1:${tls}/`],
  ports: [plain, tls],
  limits: { connectTimeout: '200ms', upstreamTimeout: '10s' },
});

describe('upstream connections', () => {
  it('plain: large bodies in uneven chunks arrive whole, eight at once', async () => {
    const g = await start();
    const runs = await Promise.all(
      Array.from({ length: 8 }, () => viaProxy(g.gw.proxy.port, `http://127.0.0.1:${plain}/big`)),
    );
    for (const res of runs) {
      expect(res.status).toBe(200);
      expect(res.body.length).toBe(BIG.length);
      expect(sha(res.body)).toBe(sha(BIG));
    }
  });

  it.each([
    ['plain', () => `http://127.0.0.1:${plain}/slow`],
    ['TLS', () => `https://127.0.0.1:${tls}/slow`],
  ])('%s: an answer slower than connectTimeout is waited for', async (_kind, url) => {
    const g = await start();
    const res = await curl(['--cacert', ca.certPath, '-x', g.proxyUrl, url()]);
    expect(res.status).toBe(200);
    expect(res.body).toBe('ok');
  });
});
