import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AgentAnswer, AgentHead, AgentRequest } from '../http/agent-message.js';
import { dropIfAnswered, writeRawRefusal } from '../action/respond.js';
import type { Refusal } from '../action/refusal.js';
import type { Problem } from './request-rules.js';
import { parseErrorProblem } from './request-rules.js';

/**
 * What an HTTP/1.1 engine calls for what it read: on the listener (proxy.ts, or
 * lean/lean-server.ts) the proxy's handlers, inside a read tunnel the tunnel's (inner-handlers.ts).
 */
export interface ProxyHandlers {
  request(req: AgentRequest, res: AgentAnswer): void;
  /** CONNECT, or a request that upgrades: `head` is what came after its head. */
  raw(kind: 'connect' | 'upgrade', req: AgentHead, socket: Socket, head: Buffer): void;
  /** A request that could not be parsed (or whose head came too late). */
  clientError(err: Error & { code?: string; reason?: string }, socket: Duplex): void;
}

/**
 * Answers a request the parser refused (or whose head came too late) on its raw socket, with
 * the refusal `refusal` journals; `where` names a tunnel it was read in.
 */
export function refuseParseError(
  err: Error & { code?: string; reason?: string },
  socket: Duplex,
  where: string,
  refusal: (problem: Problem) => Refusal,
): void {
  const problem = parseErrorProblem(err, where);
  // A connection that went away, or that was already answered (the parser then reports the
  // close as a second error), has nobody to answer and nothing new to record.
  if (problem.status === 0 || socket.writableEnded || socket.destroyed) {
    socket.destroy();
    return;
  }
  if (dropIfAnswered(socket)) return;
  writeRawRefusal(socket, refusal(problem));
}
