import type { AgentHead } from '../http/agent-message.js';
import type { Socket } from 'node:net';

/** Refuses a raw-socket request before it is judged: journaled, then closed. */
export type RawRefuser = (
  status: number,
  reason: string,
  session?: string,
  headers?: Record<string, string>,
) => void;

/** A request that takes its connection over (CONNECT, Upgrade), as the proxy hands it on. */
export interface RawRequest {
  readonly req: AgentHead;
  readonly socket: Socket;
  /** What the client sent past the request head. */
  readonly head: Buffer;
  /** performance.now() when it arrived. */
  readonly start: number;
  readonly refuse: RawRefuser;
}
