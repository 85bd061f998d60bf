import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { FlowControl } from '../action/flows.js';
import { socketControl } from '../action/flow-registry.js';
import type { Transfer } from '../action/transfer.js';
import type { Config } from '../config/load.js';
import type { NetworkSubject } from '../event/event.js';
import { canonicalHost } from '../event/network-target.js';
import type { NetworkPattern } from '../event/network-pattern.js';
import { matchesNetwork, parseNetworkPattern } from '../event/network-pattern.js';
import type { LeafCache } from '../tls/leaves.js';
import type { InnerH2 } from './inner-h2.js';
import type { InnerHttp } from './inner-http.js';
import type { Tunnel } from './tunnel-names.js';

/** How a refusal of the handshake by the agent is passed on: its alert, or `closed`. */
type Refuse = (tunnel: Tunnel, status: number, reason: string, handshake?: string) => void;

/** The TLS alerts (RFC 8446 § 6.2) a client sends when it does not accept a certificate. */
const REFUSING = /ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN)$/;

/**
 * Whether the agent refused the handshake, as a client that does not trust trajgate's CA does:
 * the alert it sent (`unknown_ca`, …), `closed` when it hung up; undefined for anything else
 * (a wrong SNI, no common protocol).
 */
function refusedBy(err: Error & { code?: string }): string | undefined {
  const alert = REFUSING.exec(err.code ?? '')?.[1];
  if (alert !== undefined) return alert.toLowerCase();
  return err.code === 'ECONNRESET' || err.code === 'EPIPE' ? 'closed' : undefined;
}

/**
 * TLS interception for CONNECT targets matching `tls.intercept`: once the CONNECT is answered,
 * trajgate completes the handshake with a leaf certificate for the CONNECT host (signed by its
 * CA) and hands the decrypted HTTP to the inner server of the protocol the agent chose by ALPN
 * (HTTP/2 or HTTP/1.1), so every request is judged with its method and URL. An SNI other than
 * the CONNECT host fails the handshake.
 */
export class Interceptor {
  readonly #patterns: readonly NetworkPattern[];
  readonly #leaves: LeafCache;
  readonly #inner: InnerHttp;
  readonly #h2: InnerH2;
  readonly #handshakeMs: number;
  readonly #refuse: Refuse;

  constructor(
    config: {
      readonly tls: Pick<Config['tls'], 'intercept'>;
      readonly limits: Pick<Config['limits'], 'headerTimeout'>;
    },
    leaves: LeafCache,
    inner: InnerHttp,
    h2: InnerH2,
    refuse: Refuse,
  ) {
    this.#patterns = config.tls.intercept.map(parseNetworkPattern);
    this.#leaves = leaves;
    this.#inner = inner;
    this.#h2 = h2;
    this.#handshakeMs = config.limits.headerTimeout;
    this.#refuse = refuse;
  }

  matches(subject: NetworkSubject): boolean {
    return this.#patterns.some((p) => matchesNetwork(p, subject));
  }

  /**
   * Terminates TLS on an answered CONNECT; `onOpen` gets the connection's control once the
   * handshake is done. Resolves when the tunnel closes.
   */
  open(
    socket: Duplex,
    tunnel: Tunnel,
    onOpen: (control: FlowControl) => void,
  ): Promise<Omit<Transfer, 'status'>> {
    let secured = false;
    let failed: string | undefined;
    const tls = new TLSSocket(socket as Socket, {
      isServer: true,
      secureContext: this.#leaves.context(tunnel.host),
      // RFC 9113 § 3.2: the agent picks; a client that offers nothing speaks HTTP/1.1.
      ALPNProtocols: ['h2', 'http/1.1'],
      SNICallback: (servername, callback) => {
        let name: string | null = null;
        try {
          name = canonicalHost(servername);
        } catch {
          // an unparsable name is refused below like any other mismatch
        }
        if (name !== tunnel.host) {
          return callback(
            new Error(
              `SNI ${JSON.stringify(servername)} does not match the CONNECT host ${tunnel.host}`,
            ),
            undefined,
          );
        }
        callback(null, this.#leaves.context(tunnel.host));
      },
    });
    const fail = (status: number, reason: string, handshake?: string) => {
      if (failed !== undefined) return;
      failed = reason;
      this.#refuse(tunnel, status, reason, handshake);
      tls.destroy();
    };
    const timer = setTimeout(
      () => fail(408, `TLS handshake not completed within ${this.#handshakeMs} ms`),
      this.#handshakeMs,
    );
    tls.once('secure', () => {
      secured = true;
      clearTimeout(timer);
      if (tls.alpnProtocol === 'h2') return onOpen(this.#h2.serve(tls, tunnel));
      this.#inner.serve(tls, tunnel);
      onOpen(socketControl(tls));
    });
    tls.on('error', (err: Error & { reason?: string; code?: string }) => {
      // OpenSSL's messages span lines and name source files: its reason is the readable part.
      const why = err.reason ?? err.code ?? err.message.split('\n')[0];
      if (!secured) fail(400, `TLS handshake with the agent failed: ${why}`, refusedBy(err));
      else tls.destroy();
    });
    // The proxy's sockets allow half-open connections, so the agent's end does not close
    // the TLS socket by itself: an end before the handshake is a refusal, after it a close.
    tls.once('end', () => {
      if (!secured)
        fail(
          400,
          "TLS handshake abandoned: the agent closed the connection (as an agent that does not trust trajgate's CA does)",
          'closed',
        );
      tls.destroy();
    });
    return new Promise((resolve) =>
      tls.once('close', () => {
        clearTimeout(timer);
        const s = socket as Socket;
        resolve({
          bytesUp: s.bytesRead ?? 0,
          bytesDown: s.bytesWritten ?? 0,
          ...(failed ? { error: failed } : {}),
        });
      }),
    );
  }
}
