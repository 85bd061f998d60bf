import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';
import { readBody } from './upstream.js';

export interface Delivery {
  readonly headers: IncomingHttpHeaders;
  readonly body: any;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
}

export interface WebhookReceiver {
  readonly port: number;
  readonly url: string;
  /** Every POST it received, parsed as JSON, in order. */
  readonly deliveries: Delivery[];
  /** Status to answer with; `null` reads the request and never answers. */
  status: number | null;
  /** TCP connections accepted, and the most that were open at once. */
  connections: number;
  peakOpen: number;
  /** Answers every request left hanging (while `status` was null) with `status`. */
  release(status: number): void;
}

/** A loopback webhook receiver on port 0; closes everything after the test file. */
export async function startWebhook(status: number | null = 204): Promise<WebhookReceiver> {
  const hanging = new Set<ServerResponse>();
  let open = 0;
  const receiver: WebhookReceiver = {
    port: 0,
    url: '',
    deliveries: [],
    status,
    connections: 0,
    peakOpen: 0,
    release(answer) {
      for (const res of hanging) res.writeHead(answer).end();
      hanging.clear();
    },
  };
  const server = createServer(async (req, res) => {
    const { body } = await readBody(req);
    receiver.deliveries.push({ headers: req.headers, body, at: Date.now() });
    if (receiver.status === null) {
      hanging.add(res);
      return;
    }
    res.writeHead(receiver.status).end();
  });
  server.on('connection', (socket) => {
    receiver.connections++;
    receiver.peakOpen = Math.max(receiver.peakOpen, ++open);
    socket.once('close', () => open--);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  Object.assign(receiver, { port, url: `http://127.0.0.1:${port}/hook` });
  afterAll(() => {
    hanging.clear();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return receiver;
}
