/** SOCKS5 (RFC 1928) and its username/password sub-negotiation (RFC 1929), as bytes. */
import { parseIp } from '../action/addresses.js';

/** RFC 1928 § 3: the version every SOCKS5 message starts with. */
export const SOCKS5 = 0x05;
/** RFC 1929 § 2: the sub-negotiation's own version. */
export const USERPASS_VERSION = 0x01;
/** RFC 1928 § 3: authentication methods. */
export const NO_AUTH = 0x00;
export const USERPASS = 0x02;
export const NO_ACCEPTABLE = 0xff;

/** RFC 1928 § 6: the REP field of a reply. */
export const REPLY = {
  succeeded: 0x00,
  failure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  refused: 0x05,
  commandNotSupported: 0x07,
  addressNotSupported: 0x08,
} as const;

const COMMANDS: Record<number, string> = { 1: 'CONNECT', 2: 'BIND', 3: 'UDP ASSOCIATE' };
const CONNECT = 0x01;
const IPV4 = 0x01;
const DOMAIN = 0x03;
const IPV6 = 0x04;

/** A message read whole (`used` bytes), one that needs more bytes, or one that is wrong. */
export type Parsed<T> =
  | { readonly kind: 'more' }
  | { readonly kind: 'ok'; readonly value: T; readonly used: number }
  | Bad;

/** What is wrong, the reply code it gets (RFC 1928 § 6) and the status it is journaled as. */
export interface Bad {
  readonly kind: 'bad';
  readonly reason: string;
  readonly status: number;
  readonly reply: number;
  /** `host:port` and the command, when the request named them. */
  readonly target?: string;
  readonly method?: string;
}

const MORE = { kind: 'more' } as const;
const hex = (b: number) => `0x${b.toString(16).padStart(2, '0')}`;
const bad = (reason: string, reply: number = REPLY.failure, status = 400): Bad => ({
  kind: 'bad',
  reason,
  status,
  reply,
});

/** Not SOCKS5 at all: what the first byte says it is, so the client's user knows what to fix. */
function notSocks5(first: number): string {
  const what =
    first === 0x04
      ? 'SOCKS4, which trajgate does not serve'
      : /[A-Z]/.test(String.fromCharCode(first))
        ? 'an HTTP request: send those to listen.proxy'
        : `version byte ${hex(first)}`;
  return `not a SOCKS5 greeting (RFC 1928 § 3): ${what}`;
}

/** RFC 1928 § 3: VER NMETHODS METHODS…; the methods the client offers. */
export function parseGreeting(buf: Buffer): Parsed<ReadonlySet<number>> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== SOCKS5) return bad(notSocks5(buf[0] as number), NO_ACCEPTABLE);
  if (buf.length < 2) return MORE;
  const n = buf[1] as number;
  if (n === 0) return bad('the SOCKS5 greeting offers no methods (NMETHODS 0, RFC 1928 § 3)');
  if (buf.length < 2 + n) return MORE;
  return { kind: 'ok', value: new Set(buf.subarray(2, 2 + n)), used: 2 + n };
}

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** RFC 1929 § 2: VER ULEN UNAME PLEN PASSWD. */
export function parseCredentials(buf: Buffer): Parsed<Credentials> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== USERPASS_VERSION)
    return bad(
      `the username/password sub-negotiation's version is ${hex(buf[0] as number)}, not 0x01 (RFC 1929 § 2)`,
    );
  if (buf.length < 2) return MORE;
  const ulen = buf[1] as number;
  if (ulen === 0) return bad('the SOCKS5 username is empty: give the agent id (RFC 1929 § 2)');
  if (buf.length < 3 + ulen) return MORE;
  const plen = buf[2 + ulen] as number;
  const used = 3 + ulen + plen;
  if (buf.length < used) return MORE;
  const user = buf.toString('utf8', 2, 2 + ulen);
  const password = buf.toString('utf8', 3 + ulen, used);
  return { kind: 'ok', value: { user, password }, used };
}

/** A CONNECT request's destination: an address as text (IPv6 bracketed), or a name. */
export interface SocksRequest {
  readonly host: string;
  readonly port: number;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** Bytes a name may not carry: they would change how `host:port` reads. */
const NOT_IN_NAME = /[\x00-\x20\x7f:/?#@[\]\\%]/;

/** RFC 1928 § 4: VER CMD RSV ATYP DST.ADDR DST.PORT. Only CONNECT is served. */
export function parseRequest(buf: Buffer): Parsed<SocksRequest> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== SOCKS5)
    return bad(`the SOCKS5 request's version is ${hex(buf[0] as number)}, not 0x05 (RFC 1928 § 4)`);
  if (buf.length < 5) return MORE;
  const [cmd, rsv, atyp] = [buf[1] as number, buf[2] as number, buf[3] as number];
  const addrEnd =
    atyp === IPV4 ? 8 : atyp === IPV6 ? 20 : atyp === DOMAIN ? 5 + (buf[4] as number) : -1;
  if (addrEnd === -1)
    return bad(
      `address type ${hex(atyp)} is not one of IPv4 (0x01), a name (0x03) or IPv6 (0x04) (RFC 1928 § 5)`,
      REPLY.addressNotSupported,
    );
  if (buf.length < addrEnd + 2) return MORE;
  const port = buf.readUInt16BE(addrEnd);
  const raw = buf.subarray(atyp === DOMAIN ? 5 : 4, addrEnd);
  let host: string;
  if (atyp === IPV4) host = raw.join('.');
  else if (atyp === IPV6) host = `[${ipv6(raw)}]`;
  else {
    if (raw.length === 0) return bad('the SOCKS5 request names an empty host (RFC 1928 § 5)');
    try {
      host = UTF8.decode(raw);
    } catch {
      return bad("the SOCKS5 request's host name is not UTF-8");
    }
    if (NOT_IN_NAME.test(host))
      return bad(`the SOCKS5 request's host name ${JSON.stringify(host)} has bytes no name has`);
  }
  const used = addrEnd + 2;
  const target = `${host}:${port}`;
  const method = COMMANDS[cmd] ?? `command ${hex(cmd)}`;
  if (rsv !== 0)
    return {
      ...bad(`the SOCKS5 request's reserved byte is ${hex(rsv)}, not 0 (RFC 1928 § 4)`),
      target,
    };
  if (cmd !== CONNECT)
    return {
      ...bad(
        `${method} is not served: trajgate's SOCKS5 listener takes CONNECT only`,
        REPLY.commandNotSupported,
        501,
      ),
      target,
      method,
    };
  return { kind: 'ok', value: { host, port }, used };
}

function ipv6(raw: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(raw.readUInt16BE(i).toString(16));
  return groups.join(':');
}

/**
 * RFC 1928 § 6: VER REP RSV ATYP BND.ADDR BND.PORT. BND is where trajgate connected from
 * (`bound`), else 0.0.0.0:0 (nothing was connected: a refusal, or a tunnel trajgate reads).
 */
export function reply(code: number, bound?: { address?: string; port?: number }): Buffer {
  const port = [(bound?.port ?? 0) >> 8, (bound?.port ?? 0) & 255];
  const ip = bound?.address === undefined ? null : parseIp(bound.address);
  if (ip?.family === 6) {
    const bytes = ip.groups.flatMap((g) => [g >> 8, g & 255]);
    return Buffer.from([SOCKS5, code, 0, IPV6, ...bytes, ...port]);
  }
  const v4 = ip === null ? 0 : ip.value;
  const bytes = [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255];
  return Buffer.from([SOCKS5, code, 0, IPV4, ...bytes, ...port]);
}
