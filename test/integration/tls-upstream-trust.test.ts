import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { OutcomeRecord } from '../../src/journal/records.js';
import { initCa } from '../../src/tls/ca.js';
import { altName, issueCertificate } from '../../src/tls/x509.js';
import { spawnGateway } from '../helpers/child-gateway.js';
import { curl } from '../helpers/curl.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Upstream TLS trusts what the machine trusts: an intercepted HTTPS upstream whose certificate
 * comes from a CA made here is verified through NODE_EXTRA_CA_CERTS alone (no tls.upstreamCa),
 * and without it the 502 and the journal say which setting would fix it. The gateway runs as a
 * child: NODE_EXTRA_CA_CERTS is read from its environment.
 */
const ca = makeLocalCa();
const upstreamCa = initCa(join(tempDir('trajgate-up-ca-'), 'certs'));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const DAY = 86_400_000;
const leaf = issueCertificate(
  {
    subject: '127.0.0.1',
    issuer: upstreamCa.cert,
    publicKey: privateKey,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + DAY),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [altName('127.0.0.1')] },
    ],
  },
  upstreamCa.key,
);
let requests = 0;
const upstream = createHttpsServer(
  { key: privateKey.export({ type: 'pkcs8', format: 'pem' }), cert: leaf },
  (_req, res) => {
    requests++;
    res.end('upstream ok\n');
  },
);
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const port = (upstream.address() as AddressInfo).port;
const ORIGIN = `https://127.0.0.1:${port}`;
afterAll(() => {
  upstream.closeAllConnections();
  return new Promise<void>((r) => upstream.close(() => r()));
});

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** `trajgate start` intercepting the upstream, with NODE_EXTRA_CA_CERTS as given. */
async function gateway(extraCaCerts: string) {
  const {
    cli,
    journal,
    proxy: proxyPort,
  } = await spawnGateway(
    {
      network: { allow: [`GET ${ORIGIN}/`], allowPrivate: ['127.0.0.0/8'], ports: [443, port] },
      tls: { intercept: [`127.0.0.1:${port}`], ca: ca.dir },
    },
    { NODE_EXTRA_CA_CERTS: extraCaCerts },
  );
  stops.push(() => {
    cli.child.kill('SIGTERM');
    return cli.exited;
  });
  const proxy = `http://127.0.0.1:${proxyPort}`;
  const outcomes = () =>
    readFileSync(journal, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { type: string })
      .filter((r): r is OutcomeRecord => r.type === 'outcome');
  return { proxy, outcomes };
}

describe('upstream certificates verified against what the machine trusts', () => {
  it('through NODE_EXTRA_CA_CERTS alone (no tls.upstreamCa) → 200', async () => {
    const g = await gateway(upstreamCa.certPath);
    const before = requests;
    const res = await curl(['--cacert', ca.certPath, '-x', g.proxy, `${ORIGIN}/x`]);
    expect(res.status).toBe(200);
    expect(res.body).toBe('upstream ok\n');
    expect(requests).toBe(before + 1);
  });

  it('without it → 502 naming tls.upstreamCa and NODE_EXTRA_CA_CERTS, in the journal too', async () => {
    const g = await gateway('');
    const before = requests;
    const res = await curl(['--cacert', ca.certPath, '-x', g.proxy, `${ORIGIN}/x`]);
    expect(res.status).toBe(502);
    const reason = `upstream 127.0.0.1:${port} certificate not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE): add its CA to tls.upstreamCa or NODE_EXTRA_CA_CERTS`;
    expect(res.body).toBe(`trajgate: ${reason}\n`);
    expect(requests).toBe(before);
    await waitFor(() => g.outcomes().length === 1);
    expect(g.outcomes()[0]).toMatchObject({ status: 502, error: reason });
  });
});
