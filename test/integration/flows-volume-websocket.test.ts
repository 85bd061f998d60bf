import type { AddressInfo } from 'node:net';
import { ProxyAgent, WebSocket } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { EventRecord, OutcomeRecord } from '../../src/journal/records.js';
import { eventsOf, flowRecords } from '../helpers/flows.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import { agentToken } from '../helpers/ingest.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A WebSocket through the proxy (ws: over an absolute-form Upgrade) is a tunnel after its 101:
 * what the client sends counts toward the session's volume rules as it flows, so a rule pauses
 * the session while the socket is open and the socket stops relaying. A real client (undici's
 * WebSocket through its ProxyAgent) and a real server (ws) on loopback.
 */
const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise<void>((r) => server.once('listening', () => r()));
const WS = `127.0.0.1:${(server.address() as AddressInfo).port}`;
/** Bytes of every message the server received, all connections, and the text ones. */
let received = 0;
const texts: string[] = [];
server.on('connection', (socket) => {
  socket.on('message', (data: Buffer, binary: boolean) => {
    received += data.length;
    if (!binary) texts.push(data.toString());
    socket.send(`got ${data.length}`);
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const AGENT = 'agent-1';
const TOKEN = agentToken(AGENT);
const LIMIT = 100_000;
const sequences = [{ name: 'big-upload', volume: { up: '100KB', within: '1h' }, verdict: 'PAUSE' }];
const { start } = gatewayPerTest({
  agents: [{ id: AGENT, token: TOKEN }],
  network: { allow: [WS], allowPrivate: ['127.0.0.1/32'] },
});

const clients: { ws: WebSocket; agent: ProxyAgent }[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) {
    c.ws.close();
    await c.agent.close();
  }
});

/** An open WebSocket to the server through the proxy as the agent, and the answers it read. */
async function openSocket(proxyUrl: string) {
  const token = `Basic ${Buffer.from(`${AGENT}:${TOKEN}`).toString('base64')}`;
  // proxyTunnel false: ws: goes as an absolute-form Upgrade, not inside a CONNECT.
  const agent = new ProxyAgent({ uri: proxyUrl, token, proxyTunnel: false });
  const ws = new WebSocket(`ws://${WS}/stream`, { dispatcher: agent });
  clients.push({ ws, agent });
  const answers: string[] = [];
  ws.addEventListener('message', (e) => answers.push(String(e.data)));
  const closed = new Promise<void>((r) => ws.addEventListener('close', () => r()));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve());
    ws.addEventListener('error', () => reject(new Error('the WebSocket did not open')));
  });
  return { ws, answers, closed };
}

/** Lets `ms` pass: for asserting that nothing arrives meanwhile. */
const quiet = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a WebSocket counts toward volume rules as it flows', () => {
  it('past a 100KB limit the session pauses while the socket is open, and the socket stops relaying', async () => {
    const g = await start({ policy: { pause: 'hold', holdTimeout: '30s', sequences } });
    const s = await openSocket(g.proxyUrl);
    const admitted = eventsOf(g.records(), AGENT)[0] as EventRecord;
    expect(admitted).toMatchObject({ target: `http://${WS}/stream`, verdict: 'ALLOW' });
    const before = received;
    // 30 messages of 10 KB: the rule must fire well before the last of them.
    for (let i = 0; i < 30; i++) s.ws.send(Buffer.alloc(10_000, 'v'));
    await waitFor(() => g.gw.sessions.isPaused(AGENT), 20_000, 'the volume rule to pause');
    const records = g.records();
    expect(
      eventsOf(records, AGENT).find((e) => e !== admitted && e.rid === admitted.seq),
    ).toMatchObject({
      verdict: 'PAUSE',
      boundary: 'big-upload',
      rule: { name: 'big-upload' },
    });
    expect(records.some((r) => r.type === 'pause' && r.boundary === 'big-upload')).toBe(true);
    expect(flowRecords(records)).toEqual([
      expect.objectContaining({ flow: 'upgrade', rid: admitted.seq, change: 'frozen' }),
    ]);
    // Still open: the rule saw the bytes as they flowed, not at the end.
    expect(records.some((r) => r.type === 'outcome')).toBe(false);
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    // Frozen: what the client sends now never reaches the server (what was relayed before the
    // freeze may still be on its way); at most one report step past the limit went up.
    s.ws.send('after the pause');
    await quiet(400);
    expect(texts).toEqual([]);
    expect(received - before).toBeLessThan(LIMIT + 16 * 1024);
    g.gw.sessions.deny(AGENT);
    await s.closed;
    expect(flowRecords(g.records()).map((r) => [r.change, r.reason])).toEqual([
      ['frozen', 'session paused'],
      ['closed', 'denied by an operator'],
    ]);
    await waitFor(() => g.records().some((r) => r.type === 'outcome'));
    const outcome = g.records().find((r): r is OutcomeRecord => r.type === 'outcome');
    expect(outcome).toMatchObject({ rid: admitted.seq, status: 101 });
    expect(outcome?.bytesUp).toBeGreaterThanOrEqual(LIMIT);
  });
});
