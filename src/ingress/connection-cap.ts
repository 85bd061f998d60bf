import type { Server, Socket } from 'node:net';
import { plainRefusal } from '../action/refusal.js';
import { writeRawRefusal } from '../action/respond.js';
import type { Limit } from '../review/limit-log.js';
import { connectionsFor } from './open-files.js';

/** How long a refused connection has to read its 503 and close before it is cut. */
const LINGER_MS = 2_000;
/** Refused connections answered at once; more are closed unanswered (within OWN_FILES' margin). */
const LINGERING = 16;

/** Which limit a connection met, and the reason it is given (its 503, and the log). */
function full(open: number, max: number, files: number): { limit: Limit; reason: string } {
  if (open >= max)
    return {
      limit: 'limits.maxConnections',
      reason: `${max} client connections are open, limits.maxConnections: retry later, or raise limits.maxConnections`,
    };
  return {
    limit: 'RLIMIT_NOFILE',
    reason: `${open} client connections are open, all the open-files limit (ulimit -n ${files}) leaves room for: retry later, or raise ulimit -n`,
  };
}

/**
 * Caps the client connections `server` has open at once: at `limits.maxConnections` (asked at
 * each accept, so a reload applies to the next), and at what the open-files limit `files`
 * leaves room for (open-files.ts). One more is accepted and answered 503 at once, before
 * Node's HTTP parser sees it (it has sent no request that could be journaled), and `refused`
 * is told. Node's own `server.maxConnections` would close it without a word. What it sent is
 * read and dropped while the answer goes out, so a reset does not destroy the answer (RFC 9112
 * § 9.6), and it is cut after LINGER_MS; beyond LINGERING of those, one is closed at once.
 */
export function capConnections(
  server: Server,
  maxConnections: () => number,
  files: number,
  refused: (limit: Limit, reason: string) => void,
): void {
  // Node's HTTP connection listener: it runs for admitted connections only.
  const serve = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const room = connectionsFor(files);
  let open = 0;
  let lingering = 0;
  server.on('connection', (socket: Socket) => {
    const max = maxConnections();
    if (open < max && open < room) {
      open++;
      socket.once('close', () => open--);
      for (const listener of serve) listener.call(server, socket);
      return;
    }
    const { limit, reason } = full(open, max, files);
    refused(limit, reason);
    // Under a flood, answers held open would take the files the cap keeps for connections.
    if (lingering >= LINGERING) {
      socket.destroy();
      return;
    }
    lingering++;
    socket.on('error', () => socket.destroy());
    const cut = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => {
      lingering--;
      clearTimeout(cut);
    });
    writeRawRefusal(socket, plainRefusal(503, reason));
    socket.resume();
  });
}
