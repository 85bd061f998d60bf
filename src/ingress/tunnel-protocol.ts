import type { FirstBytes } from '../action/relay-direction.js';
import type { TunnelProtocol } from '../event/network-pattern.js';
import type { RequiredProtocols } from '../guard/approvals.js';

/** What a tunnel's first client bytes are; `more` while too few came to tell. */
export type Sniffed = TunnelProtocol | 'unknown' | 'more';

/** The most bytes looked at (and held back) to tell: an SSH banner's `SSH-1.99-`. */
export const SNIFF_MAX = 9;

const SSH_BANNERS = ['SSH-2.0-', 'SSH-1.99-'].map((b) => Buffer.from(b, 'latin1'));
/** PostgreSQL's first message codes: StartupMessage v3.x, SSLRequest, GSSENCRequest. */
const PG_SSL_REQUEST = 80877103;
const PG_GSSENC_REQUEST = 80877104;
/** A StartupMessage longer than this is not one (the server's own limit is 10,000 bytes). */
const PG_STARTUP_MAX = 10_000;

/**
 * Names a tunnel by its client's first bytes: an SSH identification string (RFC 4253 § 4.2:
 * the client sends it first thing, whatever the server sent), a PostgreSQL startup or
 * SSLRequest/GSSENCRequest (length, then code), or a TLS handshake record (RFC 8446 § 5.1:
 * type 22, version 3.x). `final`: no more bytes will come, so `more` is not an answer.
 */
export function sniffProtocol(first: Buffer, final: boolean): Sniffed {
  const partial = (whole: Buffer) =>
    first.length < whole.length && whole.subarray(0, first.length).equals(first);
  if (SSH_BANNERS.some((b) => first.subarray(0, b.length).equals(b))) return 'ssh';
  if (first.length >= 2 && first[0] === 0x16 && first[1] === 0x03) return 'tls';
  if (first.length >= 8) {
    const length = first.readUInt32BE(0);
    const code = first.readUInt32BE(4);
    if (length === 8 && (code === PG_SSL_REQUEST || code === PG_GSSENC_REQUEST)) return 'postgres';
    if (code >>> 16 === 3 && length > 8 && length <= PG_STARTUP_MAX) return 'postgres';
  }
  // A prefix of an SSH banner, a lone handshake type, a PostgreSQL length's leading zero byte.
  const undecided =
    first.length === 0 ||
    SSH_BANNERS.some(partial) ||
    (first.length === 1 && first[0] === 0x16) ||
    (first.length < 8 && first[0] === 0);
  return undecided && !final ? 'more' : 'unknown';
}

const NAMES: Readonly<Record<TunnelProtocol | 'unknown', string>> = {
  ssh: 'SSH',
  postgres: 'PostgreSQL',
  tls: 'TLS',
  unknown: 'no protocol trajgate knows',
};

/** Why a tunnel carrying `got` breaks what its patterns require, or null when it does not. */
export function protocolProblem(
  required: RequiredProtocols | null,
  got: TunnelProtocol | 'unknown',
): string | null {
  if (required === null || (got !== 'unknown' && required.protocols.has(got))) return null;
  const wanted = [...required.protocols].map((p) => NAMES[p]).join(' or ');
  return `the patterns that allow this tunnel (${required.patterns.join(', ')}) require ${wanted}, and its first bytes are ${NAMES[got]}`;
}

/** The look at a blind tunnel's first client bytes; `seen` once they named a protocol or none. */
export interface ProtocolLook extends FirstBytes {
  seen?: TunnelProtocol | 'unknown';
}

/**
 * Names the tunnel's protocol from its client's first bytes, whenever they come (an SSH server
 * speaks first: its banner is relayed meanwhile), and closes one its patterns do not allow,
 * `refused` told why (journaled as a refusal) before a byte of it went up.
 */
export function protocolLook(
  required: RequiredProtocols | null,
  refused: (why: string) => void,
): ProtocolLook {
  const look: ProtocolLook = {
    max: SNIFF_MAX,
    look(first, final) {
      const got = sniffProtocol(first, final);
      if (got === 'more') return 'more';
      look.seen = got;
      const why = protocolProblem(required, got);
      if (why === null) return 'relay';
      refused(why);
      return { close: why };
    },
  };
  return look;
}
