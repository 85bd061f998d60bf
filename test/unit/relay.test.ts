import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { FirstBytes } from '../../src/action/relay-direction.js';
import { relay } from '../../src/action/tunnel.js';
import { waitFor } from '../helpers/wait.js';

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

  /** Everything `socket` receives until its peer ends. */
  const readAll = (socket: Socket) =>
    new Promise<string>((resolve) => {
      let got = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (got += d));
      socket.once('end', () => resolve(got));
    });

  /** Holds back until it has seen 4 bytes or the end; closes when they start with "NO". */
  const looks: Buffer[] = [];
  const firstUp: FirstBytes = {
    max: 4,
    look(first, final) {
      looks.push(first);
      if (first.length < 4 && !final) return 'more';
      return first.subarray(0, 2).toString() === 'NO' ? { close: 'said no' } : 'relay';
    },
  };

  it.each([true, false])(
    'first bytes (reuseBuffers %s): held back in pieces, then relayed whole; at the end, looked at once more',
    async (reuseBuffers) => {
      looks.length = 0;
      const [client, clientPeer] = await pair();
      const [upstream, upstreamPeer] = await pair();
      const up = readAll(upstreamPeer);
      const done = relay(client, upstream, 5_000, { toClient: null, toUpstream: [] }, undefined, {
        reuseBuffers,
        firstUp,
      });
      clientPeer.write('a');
      await waitFor(() => looks.length === 1, 5_000, "the relay looked at 'a'");
      clientPeer.end('b');
      expect(await up).toBe('ab');
      // The server end: the relay ends once both sides did.
      upstreamPeer.end();
      const result = await done;
      expect(result).toMatchObject({ bytesUp: 2, bytesDown: 0 });
      expect(looks.at(-1)?.toString()).toBe('ab');
      clientPeer.destroy();
    },
  );

  it('first bytes refused: nothing goes up, both sides close with the reason', async () => {
    const [client, clientPeer] = await pair();
    const [upstream, upstreamPeer] = await pair();
    const up = readAll(upstreamPeer);
    const done = relay(client, upstream, 5_000, { toClient: null, toUpstream: [] }, undefined, {
      firstUp,
    });
    clientPeer.write('NOPE and more');
    upstreamPeer.on('error', () => {});
    const closed = new Promise((r) => clientPeer.once('close', r));
    expect(await done).toEqual({ bytesUp: 0, bytesDown: 0, error: 'said no' });
    await closed;
    expect(await up).toBe('');
  });
});
