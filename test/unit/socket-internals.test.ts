import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { moveHandle, whyNoHandleMove } from '../../src/action/socket-internals.js';
import { relay } from '../../src/action/tunnel.js';
import { waitFor } from '../helpers/wait.js';

// Plain net servers (not half-open, unlike the proxy's): the relay must make both paths pass
// a half-close through on its own.
const servers: Server[] = [];
afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

async function listening(): Promise<Server> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
const clientSide = await listening();
const originSide = await listening();

/** A connection to `server`: [the side it accepted, the side that connected]. */
async function pair(server: Server): Promise<[Socket, Socket]> {
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const near = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1' });
  await once(near, 'connect');
  return [(await accepted)[0], near];
}

function collect(socket: Socket): Buffer[] {
  const got: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => got.push(chunk));
  return got;
}

const changed = (why: string | null) =>
  `Node ${process.version} changed the net.Socket internals the tunnel relay's reused read ` +
  `buffers rely on (${why}): tunnels now fall back to 'data' events, which allocate a buffer ` +
  `per read. Update src/action/socket-internals.ts for this Node.`;

describe('socket internals', () => {
  it("this Node has what the relay's fast path relies on: a handle moves, reads land in our buffers", async () => {
    const [accepted, agent] = await pair(clientSide);
    const why = whyNoHandleMove(accepted);
    expect(why, changed(why)).toBeNull();

    const buf = Buffer.alloc(64);
    const reads: Buffer[] = [];
    const moved = moveHandle(accepted, {
      buffer: () => buf,
      callback: (n, b) => {
        reads.push(Buffer.from(b.subarray(0, n)));
        return true;
      },
    });
    expect(moved, changed('moveHandle returned null')).not.toBeNull();
    const socket = moved as Socket;
    let events = 0;
    socket.on('data', () => events++);

    const back = collect(agent);
    agent.write('into our buffer');
    await waitFor(() => Buffer.concat(reads).toString() === 'into our buffer');
    expect(events, changed("reads also came as 'data' events")).toBe(0);
    socket.write('and back');
    await waitFor(() => Buffer.concat(back).toString() === 'and back');

    const closed = once(socket, 'close');
    socket.destroy();
    agent.destroy();
    await closed;
    // The shell the handle left: the server counts it as a connection until it closes.
    accepted.destroy();
  });

  // The fast path and the fallback the relay takes when the internals are not as expected.
  it.each([
    { reuseBuffers: true, path: 'moved handles, reused buffers' },
    { reuseBuffers: false, path: "'data' events (the fallback)" },
  ])(
    'relay over $path: bytes intact both ways, backpressure and a half-close pass through',
    async ({ reuseBuffers }) => {
      const [client, agent] = await pair(clientSide);
      const [origin, upstream] = await pair(originSide);
      const up = randomBytes(3 * 1024 * 1024 + 17);
      const down = randomBytes(5 * 1024 * 1024 + 31);
      const hello = 'HTTP/1.1 200 Connection Established\r\n\r\n';

      // Sent before the relay began: read by the old socket, relayed after what is owed.
      agent.write('queued ');
      await once(client, 'readable');

      const toAgent = collect(agent);
      const toOrigin = collect(origin);
      // The agent reads nothing for a while: the download backs up into the relay.
      agent.pause();
      setTimeout(() => agent.resume(), 200);
      // The origin answers only once the agent's half-close reached it.
      origin.on('end', () => origin.end(down));
      const agentEnded = once(agent, 'end');

      const result = relay(
        client,
        upstream,
        10_000,
        { toClient: hello, toUpstream: ['early '] },
        undefined,
        {
          reuseBuffers,
        },
      );
      for (let at = 0; at < up.length; at += 256 * 1024)
        agent.write(up.subarray(at, at + 256 * 1024));
      agent.end();

      expect(await result).toEqual({ bytesUp: 13 + up.length, bytesDown: down.length });
      await agentEnded;
      expect(
        Buffer.concat(toOrigin).equals(Buffer.concat([Buffer.from('early queued '), up])),
      ).toBe(true);
      expect(Buffer.concat(toAgent).equals(Buffer.concat([Buffer.from(hello), down]))).toBe(true);
      // Which path ran: on the fallback the client socket itself read the upload.
      expect(client.bytesRead).toBe(reuseBuffers ? 0 : 7 + up.length);
      agent.destroy();
      origin.destroy();
    },
  );
});
