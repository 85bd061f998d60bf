import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Lookup } from '../../src/action/egress.js';
import type { CapturedExchange } from '../../src/action/capture.js';
import type { EventRecord, OutcomeRecord, TunnelRecord } from '../../src/journal/records.js';
import { initCa } from '../../src/tls/ca.js';
import { LeafCache } from '../../src/tls/leaves.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest, startTestGateway } from '../helpers/gateway.js';
import {
  connectTunnel,
  exchange,
  refusingPort,
  openRaw,
  roundTrip,
  startTcpServer,
  startUpgradeServer,
} from '../helpers/raw.js';
import { makeLocalCa, refusals } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The documentation says only what is true: the claims of docs/proxy.md and docs/tls.md that
 * no other test asserted. Loopback only; names under `.test` (which no resolver answers) are
 * resolved by the test's own lookup.
 */
const up = await startUpstream();
const UP = `127.0.0.1:${up.port}`;
const ws = await startUpgradeServer();
const TOKEN = 'agent-1-secret-token-0123456789';
const BASIC = `Basic ${Buffer.from(`agent-1:${TOKEN}`).toString('base64')}`;
const SESSION = '127.0.0.1';

const { start, keep } = gatewayPerTest({
  network: { allow: [UP, `127.0.0.1:${ws.port}`], allowPrivate: ['127.0.0.1/32'] },
});

const events = (g: TestGateway) => g.records().filter((r): r is EventRecord => r.type === 'event');
const outcomes = (g: TestGateway) =>
  g.records().filter((r): r is OutcomeRecord => r.type === 'outcome');
const tunnels = (g: TestGateway) =>
  g.records().filter((r): r is TunnelRecord => r.type === 'tunnel');

/** A gateway whose names resolve through `answers`; `lookups` lists every name it asked for. */
async function startResolving(
  config: Record<string, unknown>,
  answers: Record<string, readonly string[] | Error>,
): Promise<{ g: TestGateway; lookups: string[] }> {
  const lookups: string[] = [];
  const lookup: Lookup = async (host) => {
    lookups.push(host);
    const answer = answers[host] ?? new Error(`queryA ENOTFOUND ${host}`);
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const g = await startTestGateway(config, { lookup });
  onTestFinished(() => g.stop());
  return { g, lookups };
}

describe('absolute-form requests', () => {
  it('go through a pooled keep-alive connection: two requests, one upstream connection', async () => {
    const g = await start();
    const before = { connections: up.connections, seen: up.seen.length };
    for (const path of ['/one', '/two']) {
      expect((await curl(['-x', g.proxyUrl, `http://${UP}${path}`])).status).toBe(200);
    }
    expect(up.seen.slice(before.seen).map((r) => r.url)).toEqual(['/one', '/two']);
    expect(up.connections).toBe(before.connections + 1);
  });

  it('are journaled before they take effect: the event is on disk when the upstream sees it', async () => {
    let journal = '';
    const onDisk: string[] = [];
    const probe = createServer((_req, res) => {
      onDisk.push(readFileSync(journal, 'utf8'));
      res.end('ok\n');
    });
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    onTestFinished(() => new Promise<void>((r) => probe.close(() => r())));
    const PROBE = `127.0.0.1:${(probe.address() as AddressInfo).port}`;
    const g = await start({ network: { allow: [PROBE], allowPrivate: ['127.0.0.1/32'] } });
    journal = g.journalPath;
    expect((await curl(['-x', g.proxyUrl, `http://${PROBE}/journaled-first`])).status).toBe(200);
    expect(onDisk).toHaveLength(1);
    const lines = (onDisk[0] ?? '').split('\n').filter(Boolean);
    expect(lines.map((l) => JSON.parse(l) as { type: string; target: string })).toEqual([
      expect.objectContaining({ type: 'event', target: `http://${PROBE}/journaled-first` }),
    ]);
  });
});

describe('requests held while the session is paused', () => {
  it('judged again on resume, an unapproved one counts again: REVIEW 1, PAUSE 2, PAUSE 3', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s' } });
    const stranger = `http://127.0.0.1:${await refusingPort()}`;
    expect((await curl(['-x', g.proxyUrl, `${stranger}/first`])).status).toBe(403);
    const held = curl(['-x', g.proxyUrl, `${stranger}/second`]);
    await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
    expect(g.gw.sessions.resume(SESSION)).toBe(1);
    await waitFor(() => events(g).length === 3);
    expect(g.gw.sessions.isPaused(SESSION)).toBe(true);
    g.gw.sessions.deny(SESSION);
    expect((await held).status).toBe(403);
    const [, second, again] = events(g);
    expect(events(g).map((e) => [e.verdict, e.count])).toEqual([
      ['REVIEW', 1],
      ['PAUSE', 2],
      ['PAUSE', 3],
    ]);
    expect(again).toMatchObject({ rid: second?.seq, target: `${stranger}/second` });
  });

  it('a blind CONNECT held meanwhile was sent no 200: deny answers it 403, nothing opened', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s' } });
    const stranger = `http://127.0.0.1:${await refusingPort()}`;
    expect((await curl(['-x', g.proxyUrl, `${stranger}/first`])).status).toBe(403);
    const held = curl(['-x', g.proxyUrl, `${stranger}/second`]);
    await waitFor(() => g.gw.sessions.held(SESSION).length === 1);
    const before = up.connections;
    const pending = openRaw(g.gw.proxy.port, `CONNECT ${UP} HTTP/1.1\r\nHost: ${UP}\r\n\r\n`);
    await waitFor(() => g.gw.sessions.held(SESSION).length === 2);
    g.gw.sessions.deny(SESSION);
    const t = keep(await pending);
    expect(t.status).toBe(403);
    expect(t.headers['x-trajgate-verdict']).toBe('PAUSE; boundary=network');
    expect((await held).status).toBe(403);
    expect(up.connections).toBe(before);
  });
});

describe('CONNECT to port 80', () => {
  it('is answered 200 and read, never relayed blind, even when host:80 is allowed as such', async () => {
    const g = await start({
      network: { allow: ['127.0.0.1:80'], allowPrivate: ['127.0.0.1/32'] },
    });
    const t = keep(await connectTunnel(g.gw.proxy.port, '127.0.0.1:80'));
    expect(t.status).toBe(200);
    const r = await roundTrip(t.socket, '\x00\x01 not http', () => false, 3_000);
    expect(r.closed).toBe(true);
    await waitFor(() => refusals(g.records()).length === 1);
    expect(refusals(g.records())[0]).toMatchObject({
      status: 400,
      target: '127.0.0.1:80',
      reason: 'the tunnel carries neither HTTP/1.x nor TLS, so it cannot be judged',
    });
  });
});

describe('upgraded connections and tunnels read per request follow the session', () => {
  const upgradeHead =
    `GET http://127.0.0.1:${ws.port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${ws.port}\r\n` +
    `Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n`;
  const getAllowed = `GET /allowed HTTP/1.1\r\nHost: ${UP}\r\n\r\n`;
  const answered = (got: string) => got.endsWith('}');
  const rows: {
    name: string;
    target: string;
    rid(g: TestGateway): number | undefined;
    open(g: TestGateway): Promise<Socket>;
    probe(socket: Socket): Promise<string>;
  }[] = [
    {
      name: 'an upgraded connection (WebSocket)',
      target: `http://127.0.0.1:${ws.port}/ws`,
      rid: (g) => events(g).find((e) => e.target === `http://127.0.0.1:${ws.port}/ws`)?.seq,
      async open(g) {
        const t = keep(await openRaw(g.gw.proxy.port, upgradeHead));
        expect(t.status).toBe(101);
        return t.socket;
      },
      probe: async (socket) => (await roundTrip(socket, 'ping', (s) => s === 'ping')).got,
    },
    {
      name: 'a CONNECT read request by request',
      target: UP,
      rid: () => undefined,
      async open(g) {
        const t = keep(await connectTunnel(g.gw.proxy.port, UP));
        expect(t.status).toBe(200);
        return t.socket;
      },
      probe: async (socket) => (await roundTrip(socket, getAllowed, answered)).got,
    },
  ];

  it.each(rows)('$name: frozen by a pause, thawed by resume, closed by deny', async (row) => {
    const g = await start({
      network: {
        allow: [`127.0.0.1:${ws.port}`, `GET http://${UP}/allowed`],
        allowPrivate: ['127.0.0.1/32'],
      },
      policy: { pause: 'block' },
    });
    const stranger = `http://127.0.0.1:${await refusingPort()}`;
    const socket = await row.open(g);
    const ok = (got: string) =>
      (row.target === UP ? /^HTTP\/1\.1 200 [^]*\}$/ : /^ping$/).test(got);
    expect(ok(await row.probe(socket))).toBe(true);
    const change = (c: string) =>
      tunnels(g).filter((t) => t.change === c && t.target === row.target);

    for (const path of ['/one', '/two']) await curl(['-x', g.proxyUrl, `${stranger}${path}`]);
    await waitFor(() => change('frozen').length === 1);
    expect(change('frozen')[0]).toMatchObject({ session: SESSION, reason: 'session paused' });
    // `rid` names the tunnel's own event; a tunnel read per request has none (its requests do).
    expect(change('frozen')[0]?.rid).toBe(row.rid(g));

    g.gw.sessions.resume(SESSION);
    await waitFor(() => change('thawed').length === 1);
    expect(ok(await row.probe(socket))).toBe(true);

    await curl(['-x', g.proxyUrl, `${stranger}/three`]); // counted again: PAUSE at once
    await waitFor(() => change('frozen').length === 2);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    g.gw.sessions.deny(SESSION);
    await closed;
    await waitFor(() => change('closed').length === 1);
    expect(change('closed')[0]).toMatchObject({ reason: 'denied by an operator' });
  });
});

describe('egress: names are resolved once, by trajgate, and every address is checked', () => {
  it('an unapproved name is never looked up', async () => {
    const { g, lookups } = await startResolving(
      { network: { allow: [], allowPrivate: ['127.0.0.1/32'] } },
      { 'stranger.test': ['127.0.0.1'] },
    );
    const res = await curl(['-x', g.proxyUrl, `http://stranger.test:${up.port}/`]);
    expect(res.status).toBe(403);
    expect(res.headers['x-trajgate-verdict']).toBe('REVIEW; boundary=network');
    expect(lookups).toEqual([]);
  });

  it('every address a name resolves to is checked: one private address refuses it', async () => {
    const { g, lookups } = await startResolving(
      { network: { allow: [`multi.test:${up.port}`], allowPrivate: ['127.0.0.1/32'] } },
      { 'multi.test': ['127.0.0.1', '10.0.0.1'] },
    );
    const before = up.connections;
    const res = await curl(['-x', g.proxyUrl, `http://multi.test:${up.port}/`]);
    expect(res.status).toBe(403);
    expect(lookups).toEqual(['multi.test']);
    expect(events(g)[0]).toMatchObject({
      verdict: 'REVIEW',
      denied: 'private address (private 10.0.0.1)',
    });
    expect(up.connections).toBe(before);
  });

  it('the connection goes to the checked address: a name only trajgate can resolve works', async () => {
    const { g, lookups } = await startResolving(
      { network: { allow: [`plain.test:${up.port}`], allowPrivate: ['127.0.0.1/32'] } },
      { 'plain.test': ['127.0.0.1'] },
    );
    const res = await curl(['-x', g.proxyUrl, `http://plain.test:${up.port}/checked`]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({
      url: '/checked',
      headers: { host: `plain.test:${up.port}` },
    });
    expect(lookups).toEqual(['plain.test']);
  });

  it.each([
    {
      name: 'the resolver fails',
      answer: new Error('queryA ENOTFOUND gone.test'),
      reason: 'cannot resolve gone.test: queryA ENOTFOUND gone.test',
    },
    { name: 'the name has no address', answer: [], reason: 'gone.test has no address' },
  ])('a failed lookup is a 502 with a one-line reason: $name', async ({ answer, reason }) => {
    const { g } = await startResolving(
      { network: { allow: [`gone.test:${up.port}`], allowPrivate: ['127.0.0.1/32'] } },
      { 'gone.test': answer },
    );
    const res = await curl(['-x', g.proxyUrl, `http://gone.test:${up.port}/`]);
    expect(res.status).toBe(502);
    expect(res.body).toBe(`trajgate: ${reason}\n`);
    await waitFor(() => outcomes(g).length === 1);
    expect(outcomes(g)[0]).toMatchObject({ status: 502, error: reason });
  });
});

describe("the gateway's own ports", () => {
  it('the bridge port is refused too, even approved and covered by allowPrivate', async () => {
    const g = await start({ network: { allow: [], allowPrivate: ['127.0.0.0/8'] } });
    const bridge = `127.0.0.1:${g.gw.bridge.port}`;
    g.gw.sessions.approve({ pattern: bridge, session: SESSION });
    const res = await curl(['-x', g.proxyUrl, `http://${bridge}/mcp`]);
    expect(res.status).toBe(403);
    expect(events(g)).toEqual([
      expect.objectContaining({ verdict: 'REVIEW', denied: `trajgate's own port (${bridge})` }),
    ]);
    expect(g.records().filter((r) => 'source' in r && r.source === 'bridge')).toEqual([]);
  });
});

/**
 * A listener that never accepts: a child process whose event loop is blocked after listen,
 * with its accept queue (backlog 1 holds two) filled, so further SYNs are dropped and a
 * connect hangs until the connecting side gives up.
 */
async function startUnaccepting(): Promise<number> {
  const code =
    "const s = require('node:net').createServer();" +
    "s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {" +
    "  process.stdout.write(s.address().port + '\\n');" +
    '  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);' +
    '});';
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) =>
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
  );
  const fillers: Socket[] = [];
  onTestFinished(() => {
    for (const s of fillers) s.destroy();
    child.kill();
  });
  for (let i = 0; i < 2; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    fillers.push(s);
    await new Promise<void>((r) => s.once('connect', () => r()));
  }
  return port;
}

describe('upstream failures', () => {
  it('an upstream that resets before answering → 502 with a one-line reason', async () => {
    const resetting = await startTcpServer((s) => s.once('data', () => s.resetAndDestroy()));
    const target = `127.0.0.1:${resetting.port}`;
    const g = await start({ network: { allow: [target], allowPrivate: ['127.0.0.1/32'] } });
    const res = await curl(['-x', g.proxyUrl, `http://${target}/`]);
    expect(res.status).toBe(502);
    expect(res.body).toBe(`trajgate: upstream ${target} reset the connection\n`);
  });

  it('a connect timeout is a 504, for a request and for a CONNECT', async () => {
    const target = `127.0.0.1:${await startUnaccepting()}`;
    const g = await start({
      network: { allow: [target], allowPrivate: ['127.0.0.1/32'] },
      limits: { connectTimeout: '300ms', upstreamTimeout: '10s' },
    });
    const started = Date.now();
    const res = await curl(['-x', g.proxyUrl, `http://${target}/`]);
    expect(res.status).toBe(504);
    expect(res.body).toBe(`trajgate: upstream ${target} timed out\n`);
    const t = keep(await connectTunnel(g.gw.proxy.port, target));
    expect(t.status).toBe(504);
    expect(t.rest).toBe(`trajgate: upstream ${target} timed out\n`);
    expect(Date.now() - started).toBeLessThan(5_000); // the connect limit, not upstreamTimeout
  });

  it('Expect: 100-continue to an upstream that cannot be reached: 502, never 100 Continue', async () => {
    const target = `127.0.0.1:${await refusingPort()}`;
    const g = await start({ network: { allow: [target], allowPrivate: ['127.0.0.1/32'] } });
    const res = await exchange(
      g.gw.proxy.port,
      `POST http://${target}/upload HTTP/1.1\r\nHost: ${target}\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`,
    );
    expect(res.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(res.text).not.toContain('100 Continue');
    expect(res.body).toBe(`trajgate: upstream ${target} refused the connection\n`);
  });
});

describe('Proxy-Authorization never reaches an upstream', () => {
  it('nor when sent on a request inside a tunnel read request by request', async () => {
    const g = await start({
      agents: [{ id: 'agent-1', token: TOKEN }],
      network: { allow: [`GET http://${UP}/allowed`], allowPrivate: ['127.0.0.1/32'] },
    });
    const t = keep(await connectTunnel(g.gw.proxy.port, UP, { 'proxy-authorization': BASIC }));
    expect(t.status).toBe(200);
    const { got } = await roundTrip(
      t.socket,
      `GET /allowed HTTP/1.1\r\nHost: ${UP}\r\nProxy-Authorization: ${BASIC}\r\nX-Kept: yes\r\n\r\n`,
      (s) => s.endsWith('}'),
    );
    expect(got).toMatch(/^HTTP\/1\.1 200 /);
    const headers = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).headers;
    expect(headers['x-kept']).toBe('yes');
    expect(headers['proxy-authorization']).toBeUndefined();
  });
});

describe('TLS interception', () => {
  const ca = makeLocalCa();
  // An HTTPS upstream for `*.test` names, with leaves from a CA only the gateway trusts.
  const upstreamCa = initCa(join(tempDir('trajgate-up-ca-'), 'certs'));
  const upstreamLeaves = new LeafCache(upstreamCa, 10);
  const named = createHttpsServer(
    { SNICallback: (name, cb) => cb(null, upstreamLeaves.context(name)) },
    (req, res) => res.end(JSON.stringify({ url: req.url, host: req.headers.host })),
  );
  const listening = new Promise<number>((resolve) =>
    named.listen(0, '127.0.0.1', () => resolve((named.address() as AddressInfo).port)),
  );
  afterAll(() => {
    named.closeAllConnections();
    return new Promise<void>((r) => named.close(() => r()));
  });

  async function intercepting(host: string, port: number) {
    return startResolving(
      {
        tls: { intercept: [`${host}:${port}`], ca: ca.dir, upstreamCa: [upstreamCa.certPath] },
        network: {
          allow: [`GET https://${host}:${port}/`],
          allowPrivate: ['127.0.0.1/32'],
          ports: [443, port],
        },
      },
      { [host]: ['127.0.0.1'] },
    );
  }

  it('connects to the address egress checked: a name only trajgate can resolve works', async () => {
    const port = await listening;
    const { g, lookups } = await intercepting('intercepted.test', port);
    const res = await curl([
      ...['--cacert', ca.certPath, '-x', g.proxyUrl],
      `https://intercepted.test:${port}/inside`,
    ]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ url: '/inside', host: `intercepted.test:${port}` });
    expect(new Set(lookups)).toEqual(new Set(['intercepted.test']));
  });

  it('ALPN offers h2 and http/1.1: curl --http2 gets h2, curl --http1.1 gets http/1.1', async () => {
    const port = await listening;
    const { g } = await intercepting('alpn.test', port);
    const as = (version: string) =>
      curl([
        ...[version, '-v', '--cacert', ca.certPath, '-x', g.proxyUrl],
        `https://alpn.test:${port}/alpn`,
      ]);
    const h2 = await as('--http2');
    expect(h2.status).toBe(200);
    expect(h2.stderr).toMatch(/ALPN: server accepted h2/);
    const h1 = await as('--http1.1');
    expect(h1.status).toBe(200);
    expect(h1.stderr).toMatch(/ALPN: server accepted http\/1\.1/);
    expect(refusals(g.records())).toEqual([]);
  });
});

describe('capture', () => {
  const capturesOf = (g: TestGateway) => join(g.journalPath, '..', 'captures');
  async function captured(g: TestGateway): Promise<CapturedExchange> {
    const rid = events(g)[0]?.seq as number;
    const file = join(capturesOf(g), `${rid}.json`);
    let text = '';
    await waitFor(() => {
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return false;
      }
      return text.endsWith('}');
    });
    return JSON.parse(text) as CapturedExchange;
  }

  it('keeps 64 KiB of each body by default, the rest flagged truncated', async () => {
    const g = await start({ capture: { bodies: true } });
    const upload = join(tempDir(), 'upload.txt');
    writeFileSync(upload, 'u'.repeat(70_000));
    const res = await curl(['-x', g.proxyUrl, '--data-binary', `@${upload}`, `http://${UP}/big`]);
    expect(res.status).toBe(200);
    const c = await captured(g);
    expect(c.request).toMatchObject({ size: 70_000, truncated: true });
    // Text bodies are stored as text (docs/tls.md § Capture: each body says its encoding).
    expect(c.request).toMatchObject({ encoding: 'text', body: 'u'.repeat(65_536) });
    expect(c.response).toMatchObject({ size: Buffer.byteLength(res.body), truncated: true });
    expect(c.response).toMatchObject({ encoding: 'text', body: res.body.slice(0, 65_536) });
  });

  it('redacts proxy-authorization and set-cookie as well', async () => {
    const cookies = createServer((_req, res) => {
      res.setHeader('set-cookie', ['sid=sekrit-cookie; HttpOnly']);
      res.end('ok\n');
    });
    await new Promise<void>((r) => cookies.listen(0, '127.0.0.1', r));
    onTestFinished(() => new Promise<void>((r) => cookies.close(() => r())));
    const target = `127.0.0.1:${(cookies.address() as AddressInfo).port}`;
    const g = await start({
      agents: [{ id: 'agent-1', token: TOKEN }],
      network: { allow: [target], allowPrivate: ['127.0.0.1/32'] },
      capture: { bodies: true },
    });
    const res = await curl(['-x', g.proxyUrl, '-U', `agent-1:${TOKEN}`, `http://${target}/c`]);
    expect(res.status).toBe(200);
    expect(res.headers['set-cookie']).toBe('sid=sekrit-cookie; HttpOnly'); // sent as it came
    const c = await captured(g);
    const header = (part: { headers: readonly [string, string][] }, name: string) =>
      part.headers.find(([n]) => n.toLowerCase() === name)?.[1];
    expect(header(c.request, 'proxy-authorization')).toBe('[redacted]');
    expect(c.response && header(c.response, 'set-cookie')).toBe('[redacted]');
    const file = JSON.stringify(c);
    for (const secret of [TOKEN, BASIC.slice(6), 'sekrit-cookie']) {
      expect(file).not.toContain(secret);
    }
  });
});
