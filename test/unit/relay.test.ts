import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { relay } from '../../src/action/tunnel.js';

/** Pairs of connected loopback sockets: [the accepted side, the connecting side]. */
const server = createServer();
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function pair(): Promise<[Socket, Socket]> {
  // One pair at a time: the next connection the server accepts is this one.
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const near = connect((server.address() as AddressInfo).port, '127.0.0.1');
  near.on('error', () => {});
  await new Promise((r) => near.once('connect', r));
  return [await accepted, near];
}

describe('relay', () => {
  it('a side that went away before the relay began: nothing is relayed, the other is closed', async () => {
    const [client, clientPeer] = await pair();
    const [upstream, upstreamPeer] = await pair();
    client.destroy();
    const closed = new Promise((r) => upstreamPeer.once('close', r));
    const result = await relay(client, upstream, 1_000, { toClient: 'x', toUpstream: ['y'] });
    expect(result).toEqual({ bytesUp: 0, bytesDown: 0, error: 'closed before the relay began' });
    expect(upstream.destroyed).toBe(true);
    await closed;
    clientPeer.destroy();
  });
});
