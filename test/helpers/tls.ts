import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, TLSSocket as TLSSocketClass } from 'node:tls';
import type {
  ConnectionOptions,
  DetailedPeerCertificate,
  PeerCertificate,
  SecureContext,
  TLSSocket,
} from 'node:tls';
import { afterAll } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { JournalRecord, RefusalRecord } from '../../src/journal/records.js';
import { initCa } from '../../src/tls/ca.js';
import type { TestGateway } from './gateway.js';
import { gatewayPerTest, startTestGateway } from './gateway.js';
import { tempDir } from './tmp.js';

/** The test fixtures folder (test CA, server, expired and wrong-name certificates). */
export const TLS_FIXTURES = join(import.meta.dirname, '../fixtures/tls');
export const fixture = (name: string): string => join(TLS_FIXTURES, name);

/** A fresh trajgate CA (made by src/tls/ca.ts, as `trajgate ca init` does) in a temp folder. */
export interface LocalCa {
  readonly dir: string;
  readonly certPath: string;
  readonly pem: string;
}

export function makeLocalCa(): LocalCa {
  const dir = join(tempDir('trajgate-ca-'), 'certs');
  const ca = initCa(dir);
  return { dir, certPath: ca.certPath, pem: ca.certPem };
}

/** A CA folder whose files are there but are not a certificate and key (start refuses it). */
export function brokenCa(): string {
  const dir = join(tempDir('trajgate-ca-'), 'certs');
  mkdirSync(dir);
  writeFileSync(join(dir, 'ca.pem'), 'not a certificate\n');
  writeFileSync(join(dir, 'ca-key.pem'), 'not a key\n', { mode: 0o600 });
  return dir;
}

export interface InterceptOptions {
  readonly ca: LocalCa;
  /** `tls.intercept` patterns. */
  readonly intercept: readonly string[];
  /** `network.allow` patterns. */
  readonly allow: readonly string[];
  /** Ports the upstreams listen on (443 is always allowed too). */
  readonly ports: readonly number[];
  readonly capture?: Record<string, unknown>;
  readonly limits?: Record<string, unknown>;
  readonly policy?: Record<string, unknown>;
  readonly lookup?: Lookup;
  /** Trust the test upstream CA (`tls.upstreamCa`); default true. */
  readonly upstreamCa?: boolean;
  readonly agents?: readonly { readonly id: string; readonly token: string }[];
}

/** The config of a gateway intercepting `intercept`, trusting the test upstream CA. */
export function interceptConfig(options: InterceptOptions): Record<string, unknown> {
  return {
    tls: {
      intercept: [...options.intercept],
      ca: options.ca.dir,
      upstreamCa: options.upstreamCa === false ? [] : [fixture('ca.pem')],
    },
    network: {
      allow: [...options.allow],
      allowPrivate: ['127.0.0.0/8'],
      ports: [443, ...options.ports],
    },
    ...(options.capture ? { capture: options.capture } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.agents ? { agents: options.agents } : {}),
  };
}

const lookupOf = (options: InterceptOptions) => (options.lookup ? { lookup: options.lookup } : {});

/** An in-process gateway intercepting `intercept`, trusting the test upstream CA. */
export function startInterceptGateway(options: InterceptOptions): Promise<TestGateway> {
  return startTestGateway(interceptConfig(options), lookupOf(options));
}

/**
 * One intercepting gateway per test: `start` runs it on `base` with the test's own options
 * over it; it is stopped after the test.
 */
export function interceptPerTest(
  base: InterceptOptions,
): (extra?: Partial<InterceptOptions>) => Promise<TestGateway> {
  const gateways = gatewayPerTest({});
  return (extra = {}) => {
    const options = { ...base, ...extra };
    return gateways.start(interceptConfig(options), lookupOf(options));
  };
}

/**
 * An HTTPS server on 127.0.0.1 port 0 presenting `cert` (a fixture file name) with `key`;
 * answers every request 200 `ok`.
 */
export async function startTlsServer(
  cert: string,
  key: string,
): Promise<{ port: number; requests: number }> {
  const server = createHttpsServer(
    { cert: readFileSync(fixture(cert)), key: readFileSync(fixture(key)) },
    (_req, res) => {
      result.requests++;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    },
  );
  const result = { port: 0, requests: 0 };
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  result.port = (server.address() as AddressInfo).port;
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return result;
}

/** What a CONNECT and a TLS handshake through the proxy came to. */
export type Handshake =
  | { readonly ok: true; readonly socket: TLSSocket; readonly cert: PeerCertificate; ms: number }
  | { readonly ok: false; readonly status: number; readonly error: string; ms: number };

/**
 * `CONNECT authority` to the proxy on 127.0.0.1:`proxyPort`, then a TLS handshake inside
 * with `tls` options (servername, ca, …). Bounded by `timeoutMs`; the caller ends `socket`.
 */
export function handshakeThrough(
  proxyPort: number,
  authority: string,
  tls: ConnectionOptions,
  timeoutMs = 20_000,
): Promise<Handshake> {
  const start = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port: proxyPort,
      method: 'CONNECT',
      path: authority,
      headers: { host: authority },
      timeout: timeoutMs,
    });
    const fail = (status: number, error: string) =>
      resolve({ ok: false, status, error, ms: performance.now() - start });
    req.on('timeout', () => req.destroy(new Error('CONNECT timed out')));
    req.on('error', (err) => fail(0, err.message));
    req.on('connect', (res, socket: Socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return fail(res.statusCode ?? 0, `CONNECT answered ${res.statusCode}`);
      }
      // The name checked against the certificate is the CONNECT host unless `tls` says otherwise;
      // Node sends it as SNI only when it is not an IP address (or `servername` is given).
      const secure = tlsConnect({ socket, host: hostOf(authority), ...tls });
      const timer = setTimeout(() => secure.destroy(new Error('handshake timed out')), timeoutMs);
      secure.once('secureConnect', () => {
        clearTimeout(timer);
        resolve({
          ok: true,
          socket: secure,
          cert: secure.getPeerCertificate(),
          ms: performance.now() - start,
        });
      });
      secure.once('error', (err: Error & { code?: string }) => {
        clearTimeout(timer);
        secure.destroy();
        fail(200, `${err.code ?? ''} ${err.message}`.trim());
      });
    });
    req.end();
  });
}

/** The host of `host:port` or `[v6]:port`, without brackets. */
export function hostOf(authority: string): string {
  const m = /^\[([^\]]+)\]:\d+$|^([^:]+):\d+$/.exec(authority);
  return m?.[1] ?? m?.[2] ?? authority;
}

/** Sends one HTTP/1.1 request on an open TLS socket and reads the response until it closes. */
export function requestOn(
  socket: TLSSocket,
  head: string,
  timeoutMs = 20_000,
): Promise<{ text: string; status: number; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0), closed });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => {});
    socket.once('close', () => done(true));
    socket.write(head);
  });
}

export interface NodeRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `code` as an ES module in a child node (cwd = the repository, so `undici` resolves),
 * with `env` added. NODE_EXTRA_CA_CERTS is read at start, hence a child process.
 */
export function runNode(
  code: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<NodeRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', code],
      {
        cwd: join(import.meta.dirname, '../..'),
        env: { ...process.env, NODE_EXTRA_CA_CERTS: '', ...env },
        encoding: 'utf8',
        timeout: timeoutMs,
      },
      (_err, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }),
    );
  });
}

/** The journal's refusal records. */
export function refusals(records: readonly JournalRecord[]): RefusalRecord[] {
  return records.filter((r): r is RefusalRecord => r.type === 'refusal');
}

/**
 * The first bytes a Node TLS client sends (its ClientHello record), captured from a
 * loopback listener that never answers; `servername` null sends none.
 */
export async function captureClientHello(servername: string | null = 'localhost'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const server = createNetServer((socket) => {
      socket.once('data', (d: Buffer) => {
        socket.destroy();
        server.close();
        resolve(d);
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      // Without a servername Node sends no SNI to an IP address.
      const name = servername === null ? {} : { servername };
      const client = tlsConnect({ host: '127.0.0.1', port, ...name });
      client.on('error', () => {});
      setTimeout(() => {
        client.destroy();
        server.close();
        reject(new Error('no ClientHello'));
      }, 5_000).unref();
    });
  });
}

/**
 * The certificate (and chain) a server TLS context presents: a loopback handshake with a
 * server-side TLSSocket using `context`, as the interceptor does, and a client that sends
 * `servername` (none when empty) and checks nothing.
 */
export async function presented(
  context: SecureContext,
  servername = '',
): Promise<{ leaf: X509Certificate; chain: X509Certificate[] }> {
  const sockets: Socket[] = [];
  const server = createNetServer((raw) => {
    sockets.push(raw);
    const tls = new TLSSocketClass(raw, { isServer: true, secureContext: context });
    tls.on('error', () => raw.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve, reject) => {
      const client = tlsConnect({
        host: '127.0.0.1',
        port,
        rejectUnauthorized: false,
        ...(servername === '' ? {} : { servername }),
      });
      const timer = setTimeout(() => client.destroy(new Error('handshake timed out')), 5_000);
      client.once('secureConnect', () => {
        clearTimeout(timer);
        const chain: X509Certificate[] = [];
        let peer: DetailedPeerCertificate | undefined = client.getPeerCertificate(true);
        while (peer?.raw && !chain.some((c) => c.raw.equals(peer?.raw as Buffer))) {
          chain.push(new X509Certificate(peer.raw));
          peer = peer.issuerCertificate;
        }
        client.destroy();
        resolve({ leaf: chain[0] as X509Certificate, chain });
      });
      client.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/**
 * Whether a client resumes on `second` the session `first` gave it: two loopback handshakes
 * with server-side TLSSockets (as the interceptor makes), the client trusting `ca`.
 */
export async function resumesOn(
  first: SecureContext,
  second: SecureContext,
  ca: string,
  servername: string,
): Promise<boolean> {
  const contexts = [first, second];
  const sockets: Socket[] = [];
  const server = createNetServer((raw) => {
    sockets.push(raw);
    const secureContext = contexts.shift() as SecureContext;
    const tls = new TLSSocketClass(raw, { isServer: true, secureContext });
    tls.on('error', () => raw.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const connect = (session?: Buffer) => {
    // Only resumption is asked about: a full handshake with another host's leaf is not an error.
    const checkServerIdentity = () => undefined;
    const client = tlsConnect({
      host: '127.0.0.1',
      port,
      ca,
      servername,
      session,
      checkServerIdentity,
    });
    sockets.push(client);
    return client;
  };
  const session = () =>
    new Promise<Buffer>((resolve, reject) =>
      connect().once('session', resolve).once('error', reject),
    );
  const reused = (given: Buffer) =>
    new Promise<boolean>((resolve, reject) => {
      const client = connect(given);
      client.once('secureConnect', () => resolve(client.isSessionReused()));
      client.once('error', reject);
    });
  try {
    return await reused(await session());
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
}
