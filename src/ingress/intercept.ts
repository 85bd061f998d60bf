import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
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
import type { First } from './client-hello-read.js';
import { readClientHello } from './client-hello-read.js';

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
 * the CONNECT host fails the handshake, a resumed one too. An agent that reconnects to the same
 * host resumes its session from a ticket (see LeafCache) instead of a full handshake.
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
  async open(
    socket: Duplex,
    tunnel: Tunnel,
    onOpen: (control: FlowControl) => void,
  ): Promise<Omit<Transfer, 'status'>> {
    const started = performance.now();
    const hello = await readClientHello(socket, null, this.#handshakeMs);
    const early = this.#screen(hello, tunnel.host);
    if (early === undefined) {
      const left = this.#handshakeMs - (performance.now() - started);
      // A session is resumed only from a hello whose name was checked here: OpenSSL skips the
      // SNI callback when it resumes one.
      const resumable = hello.kind === 'hello';
      return this.#handshake(socket, tunnel, resumable, Math.max(left, 0), onOpen);
    }
    this.#refuse(tunnel, early.status, early.reason, early.handshake);
    const closed = socket.closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => socket.once('close', resolve));
    if (early.alert === undefined || socket.destroyed) socket.destroy();
    else socket.end(early.alert, () => socket.destroy());
    await closed;
    return { ...transferred(socket), error: early.reason };
  }

  /**
   * What ends the tunnel before any handshake: no hello in time, a hang-up, or a hello naming
   * another server than the CONNECT host. Read here rather than only in the SNI callback,
   * which OpenSSL skips when a session is resumed.
   */
  #screen(hello: First, host: string): Early | undefined {
    switch (hello.kind) {
      case 'timeout':
        return {
          status: 408,
          reason: `TLS handshake not completed within ${this.#handshakeMs} ms`,
        };
      case 'closed':
        return { status: 400, reason: ABANDONED, handshake: 'closed' };
      case 'hello': {
        const wrong = hello.sni === null ? undefined : sniMismatch(hello.sni, host);
        if (wrong === undefined) return undefined;
        return { status: 400, reason: `${FAILED}${wrong}`, alert: UNRECOGNIZED_NAME };
      }
      default:
        // OpenSSL reads it as well, and names what is wrong with it (or checks its SNI).
        return undefined;
    }
  }

  #handshake(
    socket: Duplex,
    tunnel: Tunnel,
    resumable: boolean,
    ms: number,
    onOpen: (control: FlowControl) => void,
  ): Promise<Omit<Transfer, 'status'>> {
    let secured = false;
    let failed: string | undefined;
    const tls = new TLSSocket(socket as Socket, {
      isServer: true,
      secureContext: resumable
        ? this.#leaves.context(tunnel.host)
        : this.#leaves.unresumable(tunnel.host),
      // RFC 9113 § 3.2: the agent picks; a client that offers nothing speaks HTTP/1.1.
      ALPNProtocols: ['h2', 'http/1.1'],
      // OpenSSL's reading of the name, for a full handshake (a name the parser refuses, such as
      // an address, is read only here).
      SNICallback: (servername, callback) => {
        const wrong = sniMismatch(servername, tunnel.host);
        callback(wrong === undefined ? null : new Error(wrong), undefined);
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
      ms,
    );
    tls.once('secure', () => {
      clearTimeout(timer);
      secured = true;
      if (tls.alpnProtocol === 'h2') return onOpen(this.#h2.serve(tls, tunnel));
      this.#inner.serve(tls, tunnel);
      onOpen(socketControl(tls));
    });
    tls.on('error', (err: Error & { reason?: string; code?: string }) => {
      // OpenSSL's messages span lines and name source files: its reason is the readable part.
      const why = err.reason ?? err.code ?? err.message.split('\n')[0];
      if (!secured) fail(400, `${FAILED}${why}`, refusedBy(err));
      else tls.destroy();
    });
    // The proxy's sockets allow half-open connections, so the agent's end does not close
    // the TLS socket by itself: an end before the handshake is a refusal, after it a close.
    tls.once('end', () => {
      if (!secured) fail(400, ABANDONED, 'closed');
      tls.destroy();
    });
    return new Promise((resolve) =>
      tls.once('close', () => {
        clearTimeout(timer);
        resolve({ ...transferred(socket), ...(failed ? { error: failed } : {}) });
      }),
    );
  }
}

/** A refusal before the handshake; `alert`: the TLS alert record the agent is sent. */
interface Early {
  readonly status: number;
  readonly reason: string;
  readonly handshake?: string;
  readonly alert?: Buffer;
}

const FAILED = 'TLS handshake with the agent failed: ';
const ABANDONED =
  "TLS handshake abandoned: the agent closed the connection (as an agent that does not trust trajgate's CA does)";
/** RFC 6066 § 3: a fatal unrecognized_name(112) alert, for a name the server does not serve. */
const UNRECOGNIZED_NAME = Buffer.from([0x15, 3, 3, 0, 2, 2, 112]);

/** Why `servername` (as the agent sent it) is not the CONNECT host `host`; undefined if it is. */
function sniMismatch(servername: string, host: string): string | undefined {
  try {
    if (canonicalHost(servername) === host) return undefined;
  } catch {
    // an unparsable name is refused like any other mismatch
  }
  return `SNI ${JSON.stringify(servername)} does not match the CONNECT host ${host}`;
}

/** The bytes a tunnel carried, as the agent's socket counted them. */
function transferred(socket: Duplex): { bytesUp: number; bytesDown: number } {
  const s = socket as Socket;
  return { bytesUp: s.bytesRead ?? 0, bytesDown: s.bytesWritten ?? 0 };
}
