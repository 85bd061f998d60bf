import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ProxyAgent, WebSocket } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { PauseJournalRecord } from '../../src/journal/records.js';
import { gatewayPerTest } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { fixture, interceptConfig, makeLocalCa } from '../helpers/tls.js';
import { waitFor, waitForRecords } from '../helpers/wait.js';

/**
 * A WebSocket through intercepted TLS with credentials configured: each client frame is masked
 * (RFC 6455 § 5.3), so its messages are unmasked before they are looked into; a sentinel in one
 * pauses the session and closes the connection before the message reaches the server. No
 * compression is offered upstream (a compressed message could not be looked into).
 */
const ca = makeLocalCa();
const https = createServer({
  cert: readFileSync(fixture('server.pem')),
  key: readFileSync(fixture('server-key.pem')),
});
const wss = new WebSocketServer({ server: https, perMessageDeflate: true });
const got: string[] = [];
const upgrades: IncomingHttpHeaders[] = [];
https.on('upgrade', (req) => upgrades.push(req.headers));
wss.on('connection', (ws) => {
  ws.on('message', (data: Buffer) => {
    got.push(data.toString());
    ws.send(`got ${data.toString().length}`);
  });
});
await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
const PORT = (https.address() as AddressInfo).port;
afterAll(() => {
  for (const c of wss.clients) c.terminate();
  https.closeAllConnections();
});
const SENTINEL = 'tgs_github_0123456789abcdef';
const gateways = gatewayPerTest({});
const start = (): Promise<TestGateway> =>
  gateways.start({
    ...interceptConfig({
      ca,
      intercept: [`localhost:${PORT}`],
      allow: [`localhost:${PORT}`],
      ports: [PORT],
    }),
    credentials: [
      {
        name: 'github',
        value: 'ghp_value-never-sent-0123456789',
        sentinel: SENTINEL,
        hosts: ['api.github.test:443'],
      },
    ],
  });

function open(
  g: TestGateway,
): Promise<{ ws: WebSocket; answers: string[]; closed: Promise<void> }> {
  const dispatcher = new ProxyAgent({
    uri: g.proxyUrl,
    requestTls: { ca: readFileSync(ca.certPath, 'utf8') },
  });
  const ws = new WebSocket(`wss://localhost:${PORT}/chat`, { dispatcher });
  const answers: string[] = [];
  ws.addEventListener('message', (e) => answers.push(String(e.data)));
  const closed = new Promise<void>((r) => ws.addEventListener('close', () => r()));
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => resolve({ ws, answers, closed }));
    ws.addEventListener('error', () => reject(new Error('no WebSocket')));
  });
}

describe('WebSocket messages with credentials configured', () => {
  it('a clean message goes; one carrying a sentinel pauses the session and never arrives', async () => {
    const g = await start();
    const { ws, answers, closed } = await open(g);
    expect(upgrades.at(-1)?.['sec-websocket-extensions']).toBeUndefined();
    ws.send('hello');
    await waitFor(() => answers.includes('got 5'));
    ws.send(`${'x'.repeat(3000)} token=${SENTINEL} ${'y'.repeat(3000)}`);
    await closed;
    const records = await waitForRecords(g, (r) => r.type === 'pause');
    const pause = records.find((r): r is PauseJournalRecord => r.type === 'pause');
    expect(pause?.trigger.exfiltration).toEqual({
      credential: 'github',
      where: 'WebSocket messages',
    });
    expect(got.some((m) => m.includes(SENTINEL))).toBe(false);
  });
});
