import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Refusal } from '../action/refusal.js';
import { writeRawRefusal } from '../action/respond.js';

/**
 * How a tunnel's client hears that its tunnel opened or was refused: CONNECT's HTTP answer
 * here, SOCKS5's reply in socks-answer.ts. Everything between (judging, holds, flows, the SNI
 * check) is the same code for both.
 */
export interface TunnelAnswer {
  /** How the tunnel came, for its journal records; absent for CONNECT. */
  readonly via?: 'socks';
  /** The tunnel is open (to `upstream`, once connected). Resolves once the answer is written. */
  open(socket: Duplex, upstream: Socket | null): Promise<void>;
  /** The tunnel is refused before it opened; `cause`: why its upstream could not be reached. */
  refuse(socket: Duplex, refusal: Refusal, cause?: unknown): void;
}

/** RFC 9110 § 9.3.6: any 2xx opens the tunnel; a refusal is an HTTP response with its reason. */
export const CONNECT_ANSWER: TunnelAnswer = {
  open: (socket) =>
    new Promise((resolve) =>
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n', () => resolve()),
    ),
  refuse: (socket, refusal) => writeRawRefusal(socket, refusal),
};

/** A journal record's `via`, when the tunnel came by SOCKS. */
export const via = (answer: TunnelAnswer): { readonly via?: 'socks' } =>
  answer.via === undefined ? {} : { via: answer.via };
