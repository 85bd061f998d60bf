import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { JournalRecord, TunnelRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import type { TestGateway } from '../helpers/gateway.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { connectTunnel, openRaw, roundTrip, startTcpServer } from '../helpers/raw.js';
import { startUpstream } from '../helpers/upstream.js';
import { captureClientHello } from '../helpers/tls.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Every channel is a flow from the moment it is judged until its last
 * byte. A plain streaming request freezes with its session both ways and closes on deny; a
 * CONNECT still connecting and an upgrade waiting for its `101` are reached by a pause (nothing
 * answered while paused) and by revoke, block and reload (closed, `closed: 1`, 403, never
 * `200`/`101`). Loopback only.
 */
const SESSION = '127.0.0.1';
const ADMIN = 'admin-token-for-flows-0123456789';
/** An upstream nothing allows: two requests to it pause the session. */
const stranger = await startUpstream();

/** A streaming upstream: records body chunks as they come, answers what the test pushes. */
const stream = { chunks: [] as string[], res: null as ServerResponse | null, aborted: false };
const streaming = createServer((req: IncomingMessage, res: ServerResponse) => {
  stream.res = res;
  stream.chunks = [];
  stream.aborted = false;
  req.setEncoding('latin1');
  req.on('data', (d: string) => stream.chunks.push(d));
  req.on('close', () => (stream.aborted = !req.complete));
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.write('ready;');
});
await new Promise<void>((r) => streaming.listen(0, '127.0.0.1', r));
const STREAM = `127.0.0.1:${(streaming.address() as AddressInfo).port}`;
afterAll(() => {
  streaming.closeAllConnections();
  return new Promise<void>((r) => streaming.close(() => r()));
});

/** An upstream that answers each request only when the test says (`answer`). */
const late = { pending: [] as ServerResponse[] };
const lateServer = createServer((_req, res) => late.pending.push(res));
await new Promise<void>((r) => lateServer.listen(0, '127.0.0.1', r));
const LATE = `127.0.0.1:${(lateServer.address() as AddressInfo).port}`;
afterAll(() => {
  lateServer.closeAllConnections();
  return new Promise<void>((r) => lateServer.close(() => r()));
});

/** An upgrade upstream that holds its `101` until the test sends it. */
const upgrades: { socket: Socket; head: string }[] = [];
const upgrader = await startTcpServer((socket) => {
  let head = '';
  socket.setEncoding('latin1');
  socket.on('data', function first(d: string) {
    head += d;
    if (!head.includes('\r\n\r\n')) return;
    socket.off('data', first);
    upgrades.push({ socket, head });
    socket.on('data', (more: string) => socket.write(more));
  });
});
const UPGRADER = `127.0.0.1:${upgrader.port}`;
const SWITCH =
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';

const { start } = gatewayPerTest({
  network: { allow: [STREAM, UPGRADER, LATE], allowPrivate: ['127.0.0.1/32'] },
  policy: { pause: 'block' },
  admin: { token: ADMIN },
});

/** Client sockets a test opened, closed after it (with its gateway). */
const open: Socket[] = [];
afterEach(() => open.splice(0).forEach((s) => s.destroy()));
const keep = <T extends { socket: Socket }>(t: T): T => {
  open.push(t.socket);
  return t;
};

const flowRecords = (g: TestGateway) =>
  g.records().filter((r): r is TunnelRecord => r.type === 'flow' || r.type === 'tunnel');
const pauses = (g: TestGateway) => g.records().filter((r: JournalRecord) => r.type === 'pause');

/** Two unapproved requests: REVIEW, then PAUSE (blocked). */
async function pauseSession(g: TestGateway): Promise<void> {
  expect((await curl(['-x', g.proxyUrl, `${stranger.url}/one`])).status).toBe(403);
  expect((await curl(['-x', g.proxyUrl, `${stranger.url}/two`])).status).toBe(403);
  expect(g.gw.sessions.isPaused(SESSION)).toBe(true);
}

/** What arrives within `ms`: for asserting that nothing does. */
async function quietFor(socket: Socket, ms: number): Promise<string> {
  return (await roundTrip(socket, '', () => false, ms)).got;
}

/** A chunked POST through the proxy, its first chunk sent and answered `ready;`. */
async function openUpload(g: TestGateway): Promise<Socket> {
  const t = keep(
    await openRaw(
      g.gw.proxy.port,
      `POST http://${STREAM}/upload HTTP/1.1\r\nHost: ${STREAM}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n`,
    ),
  );
  expect(t.status).toBe(200);
  if (!t.rest.includes('ready;')) await roundTrip(t.socket, '', (got) => got.includes('ready;'));
  await waitFor(() => stream.chunks.join('') === 'first', 20_000, 'the first chunk upstream');
  return t.socket;
}

describe('a plain streaming request is a flow', () => {
  it('a pause freezes its body and its answer; resume thaws both; all journaled', async () => {
    const g = await start();
    const socket = await openUpload(g);
    await pauseSession(g);
    await waitFor(
      () => flowRecords(g).some((r) => r.change === 'frozen'),
      5_000,
      'a frozen record',
    );
    expect(flowRecords(g)[0]).toMatchObject({
      type: 'flow',
      flow: 'request',
      session: SESSION,
      target: `http://${STREAM}/upload`,
      change: 'frozen',
    });
    socket.write('6\r\nsecond\r\n');
    stream.res?.write('pushed;');
    expect(await quietFor(socket, 400)).toBe('');
    expect(stream.chunks.join('')).toBe('first');
    g.gw.sessions.resume(SESSION);
    const thawed = await roundTrip(socket, '', (got) => got.includes('pushed;'));
    expect(thawed.got).toContain('pushed;');
    await waitFor(
      () => stream.chunks.join('') === 'firstsecond',
      5_000,
      'the second chunk upstream',
    );
    expect(flowRecords(g).map((r) => r.change)).toEqual(['frozen', 'thawed']);
  });

  it('deny closes it: the upstream request is aborted, the agent connection closed', async () => {
    const g = await start();
    const socket = await openUpload(g);
    await pauseSession(g);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    g.gw.sessions.deny(SESSION);
    await closed;
    await waitFor(() => stream.aborted, 20_000, 'the upstream request aborted');
    expect(flowRecords(g).at(-1)).toMatchObject({
      change: 'closed',
      reason: 'denied by an operator',
    });
    expect(stream.chunks.join('')).toBe('first');
  });

  it('an answer that arrives whole while frozen is held; deny answers 403 and ends the request', async () => {
    const g = await start();
    const before = late.pending.length;
    const answer = curl(['-x', g.proxyUrl, `http://${LATE}/late`]);
    await waitFor(() => late.pending.length > before, 20_000, 'the request upstream');
    await pauseSession(g);
    await waitFor(() => flowRecords(g).some((r) => r.change === 'frozen'), 20_000, 'frozen');
    (late.pending.at(-1) as ServerResponse).end('the whole answer');
    g.gw.sessions.deny(SESSION);
    const res = await answer;
    expect(res.status).toBe(403);
    expect(res.body).not.toContain('the whole answer');
    await waitFor(
      () => g.records().some((r) => r.type === 'outcome' && r.status === 403),
      5_000,
      'its outcome',
    );
  });

  it('a deny pattern added while it streams closes it (closed: 1)', async () => {
    const g = await start();
    const socket = await openUpload(g);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    const res = await adminClient(g.gw.admin.port, ADMIN).post('/api/denies', {
      pattern: `http://${STREAM}/upload`,
    });
    expect(res.status).toBe(201);
    expect(res.json.closed).toBe(1);
    await closed;
    expect(flowRecords(g).at(-1)).toMatchObject({ type: 'flow', change: 'closed' });
    expect(flowRecords(g).at(-1)?.reason).toMatch(/refuses it now/);
  });
});

/** Sends an upgrade request and waits until the upstream holds it, its `101` not yet sent. */
async function upgradeWaiting(
  g: TestGateway,
): Promise<{ pending: Promise<string>; socket: Socket }> {
  const socket = keep({ socket: connect({ host: '127.0.0.1', port: g.gw.proxy.port }) }).socket;
  const before = upgrades.length;
  const pending = roundTrip(
    socket,
    `GET http://${UPGRADER}/ws HTTP/1.1\r\nHost: ${UPGRADER}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    (got) => got.includes('\r\n\r\n'),
    30_000,
  ).then((r) => r.got);
  await waitFor(() => upgrades.length > before, 20_000, 'the upstream holding the upgrade');
  return { pending, socket };
}

describe('an upgrade waiting for its 101 is a flow', () => {
  it('paused meanwhile: the 101 reaches the agent only once resumed', async () => {
    const g = await start();
    const { pending, socket } = await upgradeWaiting(g);
    await pauseSession(g);
    const up = upgrades.at(-1) as { socket: Socket };
    up.socket.write(SWITCH);
    expect(await quietFor(socket, 400)).toBe('');
    g.gw.sessions.resume(SESSION);
    expect(await pending).toMatch(/^HTTP\/1\.1 101 /);
    const echoed = await roundTrip(socket, 'ping', (got) => got.includes('ping'));
    expect(echoed.got).toContain('ping');
  });

  it('a deny pattern added meanwhile closes it: 403, never 101 (closed: 1)', async () => {
    const g = await start();
    const { pending } = await upgradeWaiting(g);
    const res = await adminClient(g.gw.admin.port, ADMIN).post('/api/denies', {
      pattern: UPGRADER,
    });
    expect(res.json.closed).toBe(1);
    (upgrades.at(-1) as { socket: Socket }).socket.write(SWITCH);
    const answer = await pending;
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    // The status line, not the text: a port in the refusal's reason may hold the digits 101.
    expect(answer).not.toMatch(/^HTTP\/1\.1 101 /m);
    expect(flowRecords(g).at(-1)).toMatchObject({
      type: 'tunnel',
      flow: 'upgrade',
      change: 'closed',
    });
  });
});

/**
 * A listener whose process is blocked: the kernel completes handshakes into its accept queue
 * (backlog 1) and, once that is full, drops further SYNs, so a connect to it waits for the
 * client's SYN retries (a second or more). A child process, stopped when the file is done.
 */
async function stalledListener(): Promise<{ port: number; fill(): void }> {
  const child = spawn(process.execPath, [
    '-e',
    `const s = require('node:net').createServer();
     s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       process.stdout.write(s.address().port + '\\n');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
     });`,
  ]);
  afterAll(() => {
    child.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`stalled listener exited ${code}`)));
  });
  const fillers: Socket[] = [];
  afterAll(() => fillers.forEach((s) => s.destroy()));
  return {
    port,
    fill: () => {
      for (let i = 0; i < 4; i++) {
        const s = connect({ host: '127.0.0.1', port });
        s.on('error', () => undefined);
        fillers.push(s);
      }
    },
  };
}

describe('a CONNECT still connecting is a flow', () => {
  it('a revoke while it connects closes it: closed: 1, the agent answered 403, never 200', async () => {
    const stalled = await stalledListener();
    stalled.fill();
    const g = await start();
    const target = `127.0.0.1:${stalled.port}`;
    const approval = g.gw.sessions.approve({ pattern: target, session: SESSION });
    const opening = connectTunnel(g.gw.proxy.port, target);
    await waitFor(
      () => g.records().some((r) => r.type === 'event' && r.target === target),
      5_000,
      'the CONNECT judged',
    );
    const res = await adminClient(g.gw.admin.port, ADMIN).call(
      'DELETE',
      `/api/approvals/${approval.id}`,
    );
    expect(res.json.closed).toBe(1);
    const t = keep(await opening);
    expect(t.status).toBe(403);
    expect(flowRecords(g).at(-1)).toMatchObject({
      type: 'tunnel',
      flow: 'connect',
      target,
      change: 'closed',
    });
    expect(flowRecords(g).at(-1)?.reason).toMatch(/revoked/);
  });

  it('paused while it connects: no 200 while paused; deny then closes it', async () => {
    const stalled = await stalledListener();
    stalled.fill();
    const g = await start();
    const target = `127.0.0.1:${stalled.port}`;
    g.gw.sessions.approve({ pattern: target, session: SESSION });
    const opening = connectTunnel(g.gw.proxy.port, target);
    await waitFor(
      () => g.records().some((r) => r.type === 'event' && r.target === target),
      5_000,
      'the CONNECT judged',
    );
    await pauseSession(g);
    expect(pauses(g)).toHaveLength(1);
    await waitFor(
      () => flowRecords(g).some((r) => r.change === 'frozen'),
      5_000,
      'the flow frozen',
    );
    g.gw.sessions.deny(SESSION);
    const t = keep(await opening);
    expect(t.status).toBe(403);
  });
});

/** A TCP upstream that records what reaches it. */
const sink = { got: Buffer.alloc(0) };
const recorder = await startTcpServer((socket) =>
  socket.on('data', (d: Buffer) => (sink.got = Buffer.concat([sink.got, d]))),
);
const RECORDER = `127.0.0.1:${recorder.port}`;

describe('a blind tunnel waiting for its first byte is a flow', () => {
  it('paused after its 200: the ClientHello reaches the upstream only once resumed', async () => {
    const g = await start();
    g.gw.sessions.approve({ pattern: RECORDER, session: SESSION });
    sink.got = Buffer.alloc(0);
    const t = keep(await connectTunnel(g.gw.proxy.port, RECORDER));
    expect(t.status).toBe(200);
    await pauseSession(g);
    await waitFor(() => flowRecords(g).some((r) => r.change === 'frozen'), 20_000, 'frozen');
    const hello = await captureClientHello(null);
    t.socket.write(hello);
    await quietFor(t.socket, 400);
    expect(sink.got.length).toBe(0);
    g.gw.sessions.resume(SESSION);
    await waitFor(() => sink.got.length === hello.length, 20_000, 'the hello upstream');
    expect(sink.got.equals(hello)).toBe(true);
  });
});
