import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { ProxyAgent, WebSocket } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { WebSocket as ServerSocket } from 'ws';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { curl } from '../helpers/curl.js';
import { eventsOf, flowRecords, quietFor } from '../helpers/flows.js';
import type { TestGateway } from '../helpers/gateway.js';
import {
  fixture,
  handshakeThrough,
  interceptPerTest,
  makeLocalCa,
  refusals,
  requestOn,
} from '../helpers/tls.js';
import { outcomeOf, waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * WebSocket over TLS (`wss://`) to an intercepted host: the Upgrade read inside the decrypted
 * tunnel is checked and judged as `GET https://host/path`, sent to the upstream over TLS
 * verified against trajgate's upstream trust (`tls.upstreamCa` holds the test CA), and after
 * the `101` relayed as a flow of its session. A real client (undici's WebSocket through its
 * ProxyAgent, trusting trajgate's CA) and a real server (ws over node:https with the fixture
 * certificate) on loopback.
 */
const ca = makeLocalCa();
const https = createServer({
  cert: readFileSync(fixture('server.pem')),
  key: readFileSync(fixture('server-key.pem')),
});
const wss = new WebSocketServer({ server: https });
/** One upstream WebSocket connection: its socket, the raw TLS socket under it, what it got. */
interface Conn {
  readonly ws: ServerSocket;
  readonly raw: Socket;
  readonly texts: string[];
  received: number;
  closed: boolean;
}
const conns: Conn[] = [];
/** Every Upgrade request the upstream read: its path and fields. */
const upgrades: { url: string; headers: IncomingHttpHeaders }[] = [];
https.on('upgrade', (req) => upgrades.push({ url: req.url ?? '', headers: req.headers }));
wss.on('connection', (ws, req) => {
  const conn: Conn = { ws, raw: req.socket, texts: [], received: 0, closed: false };
  conns.push(conn);
  ws.on('message', (data: Buffer, binary: boolean) => {
    conn.received += data.length;
    if (binary) return;
    conn.texts.push(data.toString());
    ws.send(`got ${data.toString()}`);
  });
  ws.once('close', () => (conn.closed = true));
  ws.send('welcome');
});
await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
afterAll(() => {
  wss.close();
  https.closeAllConnections();
  return new Promise<void>((r) => https.close(() => r()));
});
const PORT = (https.address() as AddressInfo).port;
const WSS = `127.0.0.1:${PORT}`;
const ORIGIN = `https://${WSS}`;
const SESSION = '127.0.0.1';
/** A plain ws server, which undici reaches inside a CONNECT (a tunnel trajgate reads). */
const plain = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise<void>((r) => plain.once('listening', () => r()));
plain.on('connection', (ws) => ws.on('message', (data: Buffer) => ws.send(`plain ${data}`)));
afterAll(() => new Promise<void>((r) => plain.close(() => r())));
const WS = `127.0.0.1:${(plain.address() as AddressInfo).port}`;

const start = interceptPerTest({
  ca,
  intercept: [WSS],
  // A path pattern: the CONNECT to WS is read, each request in it judged.
  allow: [`GET ${ORIGIN}/ws`, `GET http://${WS}/ws`],
  ports: [PORT, (plain.address() as AddressInfo).port],
  policy: { pause: 'block' },
});

const clients: { ws: WebSocket; agent: ProxyAgent }[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) {
    c.ws.close();
    await c.agent.close();
  }
});

/** A WebSocket to `url` through the proxy: whether it opened, what it read. */
async function openSocket(g: TestGateway, url = `wss://${WSS}/ws`) {
  // proxyTunnel (undici's default, said here): ws: as well as wss: goes inside a CONNECT.
  const agent = new ProxyAgent({ uri: g.proxyUrl, requestTls: { ca: ca.pem }, proxyTunnel: true });
  const ws = new WebSocket(url, { dispatcher: agent });
  clients.push({ ws, agent });
  const answers: string[] = [];
  ws.addEventListener('message', (e) => answers.push(String(e.data)));
  const closed = new Promise<void>((r) => ws.addEventListener('close', () => r()));
  const opened = await new Promise<boolean>((resolve) => {
    ws.addEventListener('open', () => resolve(true));
    ws.addEventListener('error', () => resolve(false));
  });
  return { ws, answers, closed, opened };
}

/** The upstream connection opened after `before` connections, once it is there. */
async function connAfter(before: number): Promise<Conn> {
  await waitFor(() => conns.length > before, 20_000, 'the upstream WebSocket connection');
  return conns[before] as Conn;
}

/** A WebSocket Upgrade head for `path` inside the tunnel; `extra` fields replace the defaults. */
const upgradeHead = (path: string, fields: Record<string, string> = {}) => {
  const all = {
    Host: WSS,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version': '13',
    ...fields,
  };
  const lines = Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`);
  return `GET ${path} HTTP/1.1\r\n${lines.join('')}\r\n`;
};

/** Sends `head` on a fresh intercepted HTTP/1.1 connection and reads the answer to its close. */
async function upgradeRaw(g: TestGateway, head: string) {
  const hs = await handshakeThrough(g.gw.proxy.port, WSS, {
    ca: ca.pem,
    ALPNProtocols: ['http/1.1'],
  });
  if (!hs.ok) throw new Error(`handshake failed: ${hs.error}`);
  return requestOn(hs.socket, head);
}

const outcomes = (g: TestGateway, rid: number | undefined) =>
  g.records().filter((r): r is OutcomeRecord => outcomeOf(rid)(r));

/** Two requests no pattern allows (REVIEW, then PAUSE): the session pauses. */
async function pauseSession(g: TestGateway): Promise<void> {
  for (const path of ['one', 'two']) {
    await curl(['--cacert', ca.certPath, '-x', g.proxyUrl, `${ORIGIN}/not-allowed/${path}`]);
  }
  expect(g.gw.sessions.isPaused(SESSION)).toBe(true);
}

describe('wss:// to an intercepted host', () => {
  it('allowed: judged as GET https://host/path, messages flow both ways, one outcome', async () => {
    const g = await start();
    const before = conns.length;
    const s = await openSocket(g);
    expect(s.opened).toBe(true);
    const conn = await connAfter(before);
    await waitFor(() => s.answers.includes('welcome'));
    s.ws.send('hello');
    await waitFor(() => s.answers.includes('got hello'));
    expect(conn.texts).toEqual(['hello']);
    // The upstream read the Upgrade over TLS as the agent sent it, with Via added.
    expect(upgrades.at(-1)).toMatchObject({
      url: '/ws',
      headers: { host: WSS, upgrade: 'websocket', connection: 'upgrade' },
    });
    expect(upgrades.at(-1)?.headers.via).toBe('1.1 trajgate');
    const [event] = eventsOf(g.records(), SESSION);
    expect(event).toMatchObject({
      target: `${ORIGIN}/ws`,
      method: 'GET',
      verdict: 'ALLOW',
      approvedBy: `GET ${ORIGIN}/ws`,
    });
    s.ws.close();
    await s.closed;
    await waitForRecords(g, outcomeOf(event?.seq));
    const [outcome, ...more] = outcomes(g, event?.seq);
    expect(more).toEqual([]);
    expect(outcome).toMatchObject({ status: 101 });
    expect(outcome?.failed).toBeUndefined();
    // Its request head and the client's frames went up; the 101 and the server's frames down.
    expect(outcome?.bytesUp).toBeGreaterThan(upgradeHead('/ws').length);
    expect(outcome?.bytesDown).toBeGreaterThan('welcomegot hello'.length);
  });

  it('a path no pattern allows: 403 with the reason on the decrypted connection, journaled, never sent', async () => {
    const g = await start();
    const seen = upgrades.length;
    const res = await upgradeRaw(g, upgradeHead('/admin'));
    expect(res.status).toBe(403);
    expect(res.text).toMatch(/\r\nx-trajgate-verdict: REVIEW; boundary=network\r\n/i);
    const [event] = eventsOf(g.records(), SESSION);
    expect(event).toMatchObject({ target: `${ORIGIN}/admin`, method: 'GET', verdict: 'REVIEW' });
    expect(res.text).toContain(`trajgate refused this request: GET ${ORIGIN}/admin`);
    expect(res.text).toContain(`Reason: ${event?.reason}`);
    await waitForRecords(g, outcomeOf(event?.seq));
    expect(outcomes(g, event?.seq)).toEqual([
      expect.objectContaining({ status: 403, bytesUp: 0, bytesDown: 0 }),
    ]);
    // The real client is refused too (now PAUSE: the second unapproved request).
    const s = await openSocket(g, `wss://${WSS}/admin`);
    expect(s.opened).toBe(false);
    expect(eventsOf(g.records(), SESSION).map((e) => [e.target, e.verdict])).toEqual([
      [`${ORIGIN}/admin`, 'REVIEW'],
      [`${ORIGIN}/admin`, 'PAUSE'],
    ]);
    expect(upgrades.length).toBe(seen);
  });

  it('checked before judging as any inner request: a protocol not in network.upgrades 403, a Host not the tunnel 421', async () => {
    const g = await start();
    const seen = upgrades.length;
    const h2c = await upgradeRaw(g, upgradeHead('/ws', { Upgrade: 'h2c' }));
    expect(h2c.status).toBe(403);
    expect(h2c.text).toMatch(/network\.upgrades/);
    const host = await upgradeRaw(g, upgradeHead('/ws', { Host: 'other.example' }));
    expect(host.status).toBe(421);
    const records = await waitForRecords(g, (r) => r.type === 'refusal', 2);
    expect(refusals(records).map((r) => [r.status, r.session, r.target])).toEqual([
      [403, SESSION, '/ws'],
      [421, SESSION, '/ws'],
    ]);
    expect(refusals(records)[1]?.reason).toContain('do not match the tunnel');
    // Refused before judging: no event, nothing upstream.
    expect(eventsOf(records, SESSION)).toEqual([]);
    expect(upgrades.length).toBe(seen);
  });

  it('the upstream certificate is verified as for HTTPS requests: untrusted, 502 naming the fix', async () => {
    const g = await start({ upstreamCa: false });
    const seen = upgrades.length;
    const res = await upgradeRaw(g, upgradeHead('/ws'));
    expect(res.status).toBe(502);
    expect(res.text).toMatch(/certificate not trusted \(\w+\): add its CA to tls\.upstreamCa/);
    const [event] = eventsOf(g.records(), SESSION);
    await waitForRecords(g, outcomeOf(event?.seq));
    expect(outcomes(g, event?.seq)).toEqual([
      expect.objectContaining({ status: 502, failed: true }),
    ]);
    expect(upgrades.length).toBe(seen);
  });

  it('a pause freezes the socket both ways until resume', async () => {
    const g = await start();
    const before = conns.length;
    const s = await openSocket(g);
    const conn = await connAfter(before);
    s.ws.send('one');
    await waitFor(() => s.answers.includes('got one'));
    const [event] = eventsOf(g.records(), SESSION);
    await pauseSession(g);
    await waitFor(() => flowRecords(g.records()).some((r) => r.flow === 'upgrade'));
    expect(flowRecords(g.records()).filter((r) => r.flow === 'upgrade')).toEqual([
      expect.objectContaining({ rid: event?.seq, change: 'frozen', reason: 'session paused' }),
    ]);
    s.ws.send('while paused');
    conn.ws.send('pushed while paused');
    expect(await quietFor(conn.raw, 400)).toBe('');
    expect(conn.texts).toEqual(['one']);
    expect(s.answers).not.toContain('pushed while paused');
    g.gw.sessions.resume(SESSION);
    await waitFor(() => s.answers.includes('got while paused'));
    expect(conn.texts).toEqual(['one', 'while paused']);
    expect(s.answers).toContain('pushed while paused');
    expect(
      flowRecords(g.records())
        .filter((r) => r.flow === 'upgrade')
        .map((r) => r.change),
    ).toEqual(['frozen', 'thawed']);
  });

  it('a deny closes the socket at both ends; its outcome is the 101', async () => {
    const g = await start();
    const before = conns.length;
    const s = await openSocket(g);
    const conn = await connAfter(before);
    const [event] = eventsOf(g.records(), SESSION);
    await pauseSession(g);
    g.gw.sessions.deny(SESSION);
    await s.closed;
    await waitFor(() => conn.closed);
    expect(
      flowRecords(g.records())
        .filter((r) => r.flow === 'upgrade')
        .map((r) => [r.change, r.reason]),
    ).toEqual([
      ['frozen', 'session paused'],
      ['closed', 'denied by an operator'],
    ]);
    await waitForRecords(g, outcomeOf(event?.seq));
    expect(outcomes(g, event?.seq)).toEqual([expect.objectContaining({ status: 101 })]);
  });

  it('its bytes count toward volume rules as they flow: past 100KB the session pauses mid-socket', async () => {
    const LIMIT = 100_000;
    const sequences = [
      { name: 'big-upload', volume: { up: '100KB', within: '1h' }, verdict: 'PAUSE' },
    ];
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s', sequences } });
    const before = conns.length;
    const s = await openSocket(g);
    const conn = await connAfter(before);
    const admitted = eventsOf(g.records(), SESSION)[0] as EventRecord;
    // 30 messages of 10 KB: the rule must fire well before the last of them.
    for (let i = 0; i < 30; i++) s.ws.send(Buffer.alloc(10_000, 'v'));
    await waitFor(() => g.gw.sessions.isPaused(SESSION), 20_000, 'the volume rule to pause');
    const records = g.records();
    expect(
      eventsOf(records, SESSION).find((e) => e !== admitted && e.rid === admitted.seq),
    ).toMatchObject({ verdict: 'PAUSE', boundary: 'big-upload' });
    expect(flowRecords(records)).toContainEqual(
      expect.objectContaining({ flow: 'upgrade', rid: admitted.seq, change: 'frozen' }),
    );
    // Still open: the rule saw the bytes as they flowed, not at the end.
    expect(outcomes(g, admitted.seq)).toEqual([]);
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    // Frozen: what the client sends now never reaches the server (what was relayed before the
    // freeze may still be on its way); at most one report step past the limit went up.
    s.ws.send('after the pause');
    await quietFor(conn.raw, 400);
    expect(conn.texts).toEqual([]);
    expect(conn.received).toBeLessThan(LIMIT + 16 * 1024);
    g.gw.sessions.deny(SESSION);
    await s.closed;
    await waitForRecords(g, outcomeOf(admitted.seq));
    const [outcome] = outcomes(g, admitted.seq);
    expect(outcome).toMatchObject({ status: 101 });
    expect(outcome?.bytesUp).toBeGreaterThanOrEqual(LIMIT);
  });

  it('ws:// that undici sends inside a CONNECT (a read tunnel) is served the same way, as GET http://host/path', async () => {
    const g = await start();
    const s = await openSocket(g, `ws://${WS}/ws`);
    expect(s.opened).toBe(true);
    s.ws.send('hi');
    await waitFor(() => s.answers.includes('plain hi'));
    const [event] = eventsOf(g.records(), SESSION);
    expect(event).toMatchObject({ target: `http://${WS}/ws`, method: 'GET', verdict: 'ALLOW' });
    s.ws.close();
    await s.closed;
    await waitForRecords(g, outcomeOf(event?.seq));
    expect(outcomes(g, event?.seq)).toEqual([expect.objectContaining({ status: 101 })]);
  });
});
