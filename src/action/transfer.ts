import { errors } from '../undici.js';
import { errnoCode, isTrajgateError } from '../errors.js';
import type { TunnelProtocol } from '../event/network-pattern.js';
import { certificateReason } from './trust.js';

/** How a forwarded request or tunnel ended, as its outcome record says. */
export interface Transfer {
  /** Status the agent received, or null when the connection ended without one. */
  readonly status: number | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
  readonly error?: string;
  /** The upstream failed: it answered a failure or none (a refusal by trajgate is not one). */
  readonly failed?: true;
  /** A blind tunnel's TLS server name (SNI), null when it named none or carried no TLS. */
  readonly sni?: string | null;
  /** What a blind tunnel's first client bytes were; absent when the client sent none. */
  readonly protocol?: TunnelProtocol | 'unknown';
  /** A tunnel that came by the SOCKS5 listener (`listen.socks`). */
  readonly via?: 'socks';
  /** A gRPC call's status (`grpc-status`, 0 = OK): another is a failure though the HTTP one is 200. */
  readonly grpcStatus?: number;
}

/**
 * A forwarded request's transfer, `failed` when the upstream answered ≥ 400 (502 and 504 when
 * it could not be reached) or a gRPC status other than OK. Only for what was sent on: a refusal
 * by trajgate is no failure.
 */
export function upstreamOutcome<T extends Transfer>(transfer: T): T {
  const failed =
    (transfer.status !== null && transfer.status >= 400) ||
    (transfer.grpcStatus !== undefined && transfer.grpcStatus !== 0);
  return failed ? { ...transfer, failed: true } : transfer;
}

/**
 * An upstream failure as the agent hears of it: 504 when the upstream was too slow, 502 when
 * it refused, reset or spoke badly (RFC 9110 § 15.6.3, § 15.6.5), with a one-line reason.
 */
export function upstreamFailure(
  err: unknown,
  upstream: string,
): { status: 502 | 504; reason: string } {
  if (
    err instanceof errors.ConnectTimeoutError ||
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError ||
    errnoCode(err) === 'ETIMEDOUT'
  ) {
    return { status: 504, reason: `upstream ${upstream} timed out` };
  }
  const code = errnoCode(err);
  if (code !== undefined && /^(CERT_|ERR_TLS_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code)) {
    return { status: 502, reason: certificateReason(upstream, code) };
  }
  if (isTrajgateError(err) && err.code === 'E_EGRESS')
    return { status: 502, reason: `upstream ${upstream}: ${err.message}` };
  const why =
    code === 'ECONNREFUSED'
      ? 'refused the connection'
      : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE'
        ? 'reset the connection'
        : code === 'EHOSTUNREACH' || code === 'ENETUNREACH'
          ? 'is unreachable'
          : `failed (${code ?? (err as Error).message})`;
  return { status: 502, reason: `upstream ${upstream} ${why}` };
}
