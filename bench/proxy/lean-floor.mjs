// The lean floor: trajgate's own lean engine with no policy at all — its request parser
// (dist/ingress/lean/request-parser.js), its answers (lean-response.js) and its upstream client
// (dist/action/h1-pool.js) forwarding absolute-form requests, one at a time per connection. No
// judgement, no journal, no flows: what the engine costs before trajgate does anything, so a
// target trajgate misses can be split into the engine's part and the policy's.
// Usage: node lean-floor.mjs ROOT [CA_DIR UPSTREAM_CA] (a built checkout); prints {"port":N}
// once it listens. With CA_DIR (a `trajgate ca init` folder) and UPSTREAM_CA (a PEM file) a
// CONNECT is intercepted as trajgate intercepts it: TLS ended with a leaf from trajgate's leaf
// cache, the requests inside read by the same parser and sent up over trajgate's pooled TLS
// client (its egress check and certificate check); without, a CONNECT is piped blind.
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HOP } from './hop-fields.mjs';

const [root, caDir, upstreamCa] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(join(root, 'dist', file)).href);
const { RequestParser } = await load('ingress/lean/request-parser.js');
const { headerObject } = await load('ingress/lean/header-object.js');
const { LeanResponse } = await load('ingress/lean/lean-response.js');
const { H1Pool } = await load('action/h1-pool.js');

const limits = { connectTimeout: 10_000, upstreamTimeout: 30_000 };
const pool = new H1Pool(limits);
const intercept = caDir === undefined ? null : await interception();

/** The leaf cache and the pooled TLS client trajgate intercepts with, loopback allowed. */
async function interception() {
  const { loadCa } = await load('tls/ca.js');
  const { LeafCache } = await load('tls/leaves.js');
  const { Egress } = await load('action/egress.js');
  const { tlsLean, UpstreamTls } = await load('action/upstream-connect.js');
  const egress = new Egress({ allowPrivate: ['127.0.0.0/8'], timeoutMs: 5_000 });
  const trust = new UpstreamTls(() => [readFileSync(upstreamCa, 'utf8')]);
  const tls = new H1Pool(limits, tlsLean(limits.connectTimeout, egress, trust));
  return { leaves: new LeafCache(loadCa(caDir)), tls };
}

/** Raw fields with the hop-by-hop ones and Host dropped (RFC 9110 § 7.6.1). */
function endToEnd(raw) {
  const out = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = String(raw[i]);
    const lower = name.toLowerCase();
    if (!HOP.has(lower) && lower !== 'host') out.push(name, String(raw[i + 1]));
  }
  return out;
}

/** Serves one connection; `origin`: the intercepted tunnel's (requests in origin-form). */
function serve(socket, origin = null) {
  const queue = [];
  let busy = false;
  let res = null;
  /** A CONNECT's head: the parser stops there and hands over what follows. */
  let tunnel = null;
  const wire = {
    write: (data) => socket.write(data),
    finished: (last) => {
      busy = false;
      res = null;
      if (last) socket.end();
      else next();
    },
    destroy: () => socket.destroy(),
  };
  const next = () => {
    if (busy || queue.length === 0) return;
    busy = true;
    const head = queue.shift();
    const headers = headerObject(head.rawHeaders);
    res = new LeanResponse(
      { headers, httpVersionMajor: head.versionMajor },
      {
        method: head.method,
        versionMajor: head.versionMajor,
        versionMinor: head.versionMinor,
        shouldKeepAlive: head.shouldKeepAlive,
        te: headers.te,
        keepAliveMs: 5_000,
      },
      wire,
    );
    const url = new URL(origin === null ? head.url : origin + head.url);
    const tls = url.protocol === 'https:';
    const port = Number(url.port || (tls ? 443 : 80));
    const up = endToEnd(head.rawHeaders);
    up.unshift('host', url.host);
    const answer = res;
    let resume = null;
    answer.on('drain', () => resume?.());
    (tls ? intercept.tls : pool).dispatch(
      {
        authority: `${url.hostname}:${port}`,
        address: url.hostname,
        port,
        method: head.method,
        path: url.pathname + url.search,
        headers: up,
        body: null,
      },
      {
        onConnect() {},
        onHeaders(status, raw, go) {
          if (status < 200) return true;
          resume = go;
          answer.writeHead(status, endToEnd(raw));
          return true;
        },
        onData: (chunk) => answer.write(chunk),
        onComplete: () => answer.end(),
        onError: () =>
          answer.headersSent
            ? answer.destroy()
            : answer.writeHead(502, ['content-length', '0']).end(),
      },
    );
  };
  const parser = new RequestParser(
    {
      messageBegin() {},
      head: (h) => (h.upgrade ? (tunnel = h) : queue.push(h)),
      body() {},
      end: () => tunnel === null && next(),
    },
    16_384,
  );
  socket.setNoDelay(true);
  const onData = (chunk) => {
    const fed = parser.feed(chunk);
    if (fed.kind === 'more') return;
    if (fed.kind === 'error' || tunnel?.method !== 'CONNECT') return socket.destroy();
    socket.off('data', onData);
    // Nothing read meanwhile is lost: held until the next reader takes over.
    socket.pause();
    const [host, port] = tunnel.url.split(':');
    if (intercept !== null) return interceptTunnel(socket, host, port, fed.rest);
    // A CONNECT: the tunnel is piped both ways, as the floor forwarder pipes it.
    const up = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (fed.rest.length > 0) up.write(fed.rest);
      socket.pipe(up).pipe(socket);
    });
    up.on('error', () => socket.destroy());
  };
  socket.on('data', onData);
  socket.on('drain', () => res?.drained());
  socket.on('error', () => {});
  socket.on('close', () => parser.close());
}

/** Ends TLS on an answered CONNECT with a leaf for `host`, then serves the requests inside. */
function interceptTunnel(socket, host, port, rest) {
  if (rest.length > 0) socket.unshift(rest);
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  const tls = new TLSSocket(socket, {
    isServer: true,
    secureContext: intercept.leaves.context(host),
    ALPNProtocols: ['http/1.1'],
  });
  tls.once('secure', () => serve(tls, `https://${host}:${port}`));
  tls.on('error', () => tls.destroy());
}

const server = net.createServer((socket) => serve(socket));
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
