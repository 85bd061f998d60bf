import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, afterEach } from 'vitest';
import { fixture } from './tls.js';
import { waitFor } from './wait.js';

/** test/fixtures/grpc: echo.proto and the child client (client.mjs). */
const GRPC_FIXTURES = join(import.meta.dirname, '../fixtures/grpc');

interface Pong {
  readonly text: string;
  readonly n: number;
}

/** A `Count` call the test answers itself (`hold: true`). */
export interface HeldStream {
  send(text: string, n: number): Promise<void>;
  /** Ends the call with OK; resolves once the server's stream has closed. */
  end(): Promise<void>;
}

/** A TLS gRPC server (echo.proto) on 127.0.0.1 port 0 with the test fixture certificate. */
export interface GrpcUpstream {
  readonly port: number;
  readonly authority: string;
  /** `https://127.0.0.1:PORT/trajgate.test.Echo/`: the prefix of every method's URL. */
  readonly service: string;
  /** Each call's method name and metadata (the request's fields), in arrival order. */
  readonly calls: { readonly method: string; readonly metadata: Record<string, unknown> }[];
  /** The `Count` calls with `hold`, in arrival order. */
  readonly held: HeldStream[];
}

const definition = loadSync(join(GRPC_FIXTURES, 'echo.proto'));
const echo = (
  grpc.loadPackageDefinition(definition) as unknown as {
    trajgate: { test: { Echo: grpc.ServiceClientConstructor } };
  }
).trajgate.test.Echo;

export async function startGrpcUpstream(): Promise<GrpcUpstream> {
  const calls: GrpcUpstream['calls'] = [];
  const seen = (method: string, call: { metadata: grpc.Metadata }) =>
    calls.push({ method, metadata: call.metadata.getMap() });
  const held: HeldStream[] = [];
  const server = new grpc.Server();
  server.addService(echo.service, {
    Unary(call: grpc.ServerUnaryCall<{ text: string }, Pong>, done: grpc.sendUnaryData<Pong>) {
      seen('Unary', call);
      done(null, { text: call.request.text, n: Buffer.byteLength(call.request.text) });
    },
    Count(call: grpc.ServerWritableStream<{ count: number; hold: boolean }, Pong>) {
      seen('Count', call);
      if (call.request.hold) return void held.push(heldStream(call));
      for (let n = 1; n <= call.request.count; n++) call.write({ text: `message ${n}`, n });
      call.end();
    },
    Collect(
      call: grpc.ServerReadableStream<{ text: string }, Pong>,
      done: grpc.sendUnaryData<Pong>,
    ) {
      seen('Collect', call);
      const texts: string[] = [];
      call.on('data', (ping: { text: string }) => texts.push(ping.text));
      call.on('end', () => done(null, { text: texts.join(','), n: texts.length }));
    },
    Fail(
      call: grpc.ServerUnaryCall<{ code: number; message: string }, Pong>,
      done: grpc.sendUnaryData<Pong>,
    ) {
      seen('Fail', call);
      done({ code: call.request.code, details: call.request.message });
    },
  });
  const credentials = grpc.ServerCredentials.createSsl(null, [
    {
      cert_chain: readFileSync(fixture('server.pem')),
      private_key: readFileSync(fixture('server-key.pem')),
    },
  ]);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  afterAll(() => server.forceShutdown());
  const authority = `127.0.0.1:${port}`;
  return { port, authority, service: `https://${authority}/trajgate.test.Echo/`, calls, held };
}

/** An HTTP/2 server (TLS, test certificate) on 127.0.0.1 that never answers a request. */
export async function startSilentH2(): Promise<{ port: number; authority: string }> {
  const server = createSecureServer(
    { cert: readFileSync(fixture('server.pem')), key: readFileSync(fixture('server-key.pem')) },
    () => {},
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  return { port, authority: `127.0.0.1:${port}` };
}

function heldStream(call: grpc.ServerWritableStream<unknown, Pong>): HeldStream {
  const closed = new Promise<void>((r) => call.once('close', () => r()));
  call.on('error', () => {});
  return {
    send: (text, n) => new Promise((r) => call.write({ text, n }, () => r())),
    end: () => {
      call.end();
      return closed;
    },
  };
}

/** One line the child client printed (client.mjs). */
export interface ClientLine {
  readonly message?: Pong;
  readonly metadata?: Record<string, unknown>;
  readonly status?: { readonly code: number; readonly details?: string };
  readonly error?: { readonly code: number; readonly details: string; readonly message: string };
}

/** A running grpc-js client call in a child process; `lines` grow as it prints. */
export interface ClientCall {
  readonly lines: ClientLine[];
  /** Resolves with every line once the child has exited (killed after 60 s). */
  readonly done: Promise<{ lines: ClientLine[]; exitCode: number | null; stderr: string }>;
  /** Waits until a line matches. */
  until(match: (line: ClientLine) => boolean, what: string): Promise<ClientLine>;
}

const children = new Set<() => void>();
afterEach(() => {
  for (const kill of children) kill();
  children.clear();
});

/**
 * What the client trusts: a PEM file given to createSsl, or createSsl() with no roots and `env`
 * naming them (NODE_EXTRA_CA_CERTS, GRPC_DEFAULT_SSL_ROOTS_FILE_PATH), as `trajgate env` does.
 */
export type ClientTrust = { readonly ca: string } | { readonly env: Record<string, string> };

/** The worker's variables that would choose a proxy or the roots for the child. */
const CHOSEN = /proxy|^NODE_EXTRA_CA_CERTS$|^GRPC_DEFAULT_SSL_ROOTS_FILE_PATH$/i;

/**
 * Calls `method` of echo.proto on `target` with grpc-js in a child process whose environment
 * names `proxy` in `https_proxy` (userinfo as the agent's credentials) and nothing in
 * `no_proxy`, trusting `trust`. The test worker's own environment is untouched.
 */
export function grpcCall(
  proxy: string,
  trust: ClientTrust,
  target: string,
  method: 'Unary' | 'Count' | 'Collect' | 'Fail',
  request: unknown,
): ClientCall {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!CHOSEN.test(k)) env[k] = v;
  Object.assign(env, 'env' in trust ? trust.env : {}, { https_proxy: proxy });
  const ca = 'ca' in trust ? trust.ca : null;
  const child = spawn(
    process.execPath,
    [join(GRPC_FIXTURES, 'client.mjs'), JSON.stringify({ target, ca, method, request })],
    { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 },
  );
  const kill = () => child.kill('SIGKILL');
  children.add(kill);
  const lines: ClientLine[] = [];
  let out = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(out.slice(0, nl)) as ClientLine);
      out = out.slice(nl + 1);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<{ lines: ClientLine[]; exitCode: number | null; stderr: string }>(
    (resolve) =>
      child.once('close', (code) => {
        children.delete(kill);
        resolve({ lines, exitCode: code, stderr });
      }),
  );
  return {
    lines,
    done,
    async until(match, what) {
      await waitFor(() => lines.some(match), 20_000, what);
      return lines.find(match) as ClientLine;
    },
  };
}
