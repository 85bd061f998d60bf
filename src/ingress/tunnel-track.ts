import type { Duplex } from 'node:stream';
import type { Admission, TunnelControl } from '../action/live-tunnels.js';
import type { Refusal } from '../action/respond.js';
import { writeRawRefusal } from '../action/respond.js';
import type { Transfer } from '../action/transfer.js';
import type { ProxyContext } from './context.js';
import { closedWhileHeld } from './http.js';

/** A transfer and the request id its outcome belongs to. */
export type Ended = Transfer & { readonly rid: number | null };

/**
 * Registers a tunnel with the live set once it runs (`open`), frozen at once if its session
 * paused in the meantime; `close` when it ends.
 */
export function track(
  ctx: ProxyContext,
  admission: Admission,
): { open(control: TunnelControl): void; close(): void } {
  let untrack: (() => void) | null = null;
  return {
    open: (control) => {
      untrack = ctx.live.add(admission, control, ctx.pipeline.isPaused(admission.session));
    },
    close: () => untrack?.(),
  };
}

export function refused(socket: Duplex, refusal: Refusal): Transfer {
  writeRawRefusal(socket, refusal);
  return { status: refusal.status, bytesUp: 0, bytesDown: 0, error: refusal.reason };
}

/** A held tunnel whose client left: whatever is left of its socket goes too. */
export function gone(socket: Duplex, rid: number | null): Ended {
  socket.destroy();
  return { ...closedWhileHeld, rid };
}
