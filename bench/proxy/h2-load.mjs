// HTTP/2 load client: `--connections` TLS connections that negotiated `h2` by ALPN (RFC 9113
// § 3.2), each carrying `--streams` concurrent request loops (GET `--target`), for `duration`
// seconds after `warmup`; through an HTTP proxy (one CONNECT per connection, TLS inside: an
// intercepting proxy must offer h2) or straight at the upstream. The client trusts only `--ca`.
// A connection that closes is opened again at its next request. Prints one JSON line
// (bench/tls/request-loops.mjs); `--probe` sends one request and prints its status instead.
// Usage: node h2-load.mjs --target https://127.0.0.1:PORT/ --ca CA.pem [--proxy http://127.0.0.1:PORT]
//          [--connections 5] [--streams 10] [--duration 10] [--warmup 2] [--cpu-pid PID] [--probe]
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import tls from 'node:tls';
import { loadArgs, runLoad } from '../tls/request-loops.mjs';

const values = loadArgs({
  connections: { type: 'string', default: '5' },
  streams: { type: 'string', default: '10' },
});
const target = new URL(values.target);
const ca = readFileSync(values.ca);
const connections = Number(values.connections);

/** A CONNECT tunnel to the target through the proxy: its socket once the proxy answered 200. */
function tunnel() {
  const { hostname: host, port } = new URL(values.proxy);
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, method: 'CONNECT', path: target.host, agent: false });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(new Error(`CONNECT answered ${res.statusCode}`));
    });
    req.once('error', reject);
    req.end();
  });
}

/** An HTTP/2 session over TLS that chose `h2` (a proxy that chose HTTP/1.1 is an error). */
async function session() {
  const socket = values.proxy ? await tunnel() : undefined;
  const secure = await new Promise((resolve, reject) => {
    const s = tls.connect({
      ...(socket ? { socket } : { port: Number(target.port) }),
      host: target.hostname,
      ca,
      ALPNProtocols: ['h2'],
    });
    s.once('secureConnect', () => resolve(s));
    s.once('error', reject);
  });
  if (secure.alpnProtocol !== 'h2') {
    secure.destroy();
    throw new Error(`ALPN chose ${secure.alpnProtocol || 'nothing'}, not h2`);
  }
  const s = http2.connect(target.origin, { createConnection: () => secure });
  s.on('error', () => {}); // its streams fail with it; the next request opens another session
  return s;
}

const sessions = Array.from({ length: connections }, () => null);

/** The `i`th session, opened again if it closed. */
function sessionAt(i) {
  const current = sessions[i];
  if (current !== null) return current;
  const opening = session();
  sessions[i] = opening;
  opening.then(
    (s) => s.once('close', () => sessions[i] === opening && (sessions[i] = null)),
    () => (sessions[i] = null),
  );
  return opening;
}

/** One GET on the `i`th connection: its status once the body has been read. */
async function once(i) {
  const s = await sessionAt(i);
  return new Promise((resolve, reject) => {
    const stream = s.request({ ':path': target.pathname });
    let status = 0;
    stream.once('response', (headers) => (status = headers[':status']));
    stream.on('data', () => {});
    stream.once('end', () => resolve(status));
    stream.once('error', reject);
    stream.end();
  });
}

// Loop n sends on connection n mod `connections`: `--streams` loops on each.
await runLoad(values, {
  concurrency: connections * Number(values.streams),
  once: (n) => once(n % connections),
});
for (const s of sessions) (await s?.catch(() => null))?.destroy();
process.exit(0);
