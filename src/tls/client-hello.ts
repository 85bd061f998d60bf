import { isIP } from 'node:net';

/**
 * The server name a TLS ClientHello asks for (RFC 8446 § 4.1.2, server_name: RFC 6066 § 3),
 * read from the first bytes a client sends through a tunnel. Pure: given the bytes so far, it
 * says whether more are needed, what the hello names, or why it cannot be judged. Where a
 * server's TLS stack could read the hello differently (lengths that disagree, a repeated
 * extension, several names, an encrypted inner hello), it is refused rather than guessed at.
 */

/** RFC 8446 § 5.1: ContentType handshake; § 4: HandshakeType client_hello. */
export const TLS_HANDSHAKE = 0x16;
const CLIENT_HELLO = 1;
/** RFC 8446 § 5.1: a record's plaintext is at most 2^14 bytes. */
const MAX_FRAGMENT = 1 << 14;
/** A real hello is a few KiB (post-quantum key shares included); this bounds what is buffered. */
export const MAX_HELLO = 1 << 16;
const SERVER_NAME = 0x0000;
/** draft-ietf-tls-esni: encrypted_client_hello; the outer hello's name is only the front's. */
const ECH = 0xfe0d;

export type Hello =
  | { readonly kind: 'more' }
  /** `sni`: the host_name as sent, or null when the hello names none. */
  | { readonly kind: 'hello'; readonly sni: string | null }
  /** Not a well-formed ClientHello: no server would read it as trajgate did. */
  | { readonly kind: 'malformed'; readonly reason: string }
  /** Well-formed, but its server cannot be known (ECH, several names). */
  | { readonly kind: 'unjudgeable'; readonly reason: string };

const malformed = (reason: string): Hello => ({ kind: 'malformed', reason });

/** Reads the ClientHello at the start of `bytes`, which may span several records. */
export function parseClientHello(bytes: Buffer): Hello {
  const fragments: Buffer[] = [];
  let have = 0;
  let need: number | null = null;
  for (let at = 0; need === null || have < need;) {
    if (bytes.length < at + 5) return { kind: 'more' };
    if (bytes[at] !== TLS_HANDSHAKE) {
      // RFC 8446 § 5.1: handshake messages are not interleaved with other record types.
      return malformed(`record ${fragments.length + 1} is not a handshake record`);
    }
    if (bytes[at + 1] !== 3) return malformed('the record version is not TLS (3.x)');
    const length = bytes.readUInt16BE(at + 3);
    if (length === 0) return malformed('an empty handshake record (RFC 8446 § 5.1)');
    if (length > MAX_FRAGMENT) return malformed(`a record of ${length} bytes (over 2^14)`);
    if (bytes.length < at + 5 + length) return { kind: 'more' };
    fragments.push(bytes.subarray(at + 5, at + 5 + length));
    have += length;
    at += 5 + length;
    if (need === null && have >= 4) {
      const head = Buffer.concat(fragments);
      if (head[0] !== CLIENT_HELLO)
        return malformed('the first handshake message is not a ClientHello');
      const body = head.readUIntBE(1, 3);
      if (body > MAX_HELLO) return malformed(`a ClientHello of ${body} bytes (over ${MAX_HELLO})`);
      need = 4 + body;
    }
  }
  const message = Buffer.concat(fragments);
  // Bytes past the hello in its last record would be a second message before the server spoke.
  if (message.length !== need) return malformed('more handshake bytes follow the ClientHello');
  return helloBody(new Reader(message.subarray(4)));
}

function helloBody(r: Reader): Hello {
  r.skip(2 + 32); // legacy_version, random
  r.vector(1, 0, 32); // legacy_session_id
  const suites = r.vector(2, 2, 0xfffe);
  if (suites !== null && suites.length % 2 !== 0) return malformed('an odd cipher_suites length');
  r.vector(1, 1, 0xff); // legacy_compression_methods
  if (r.failed !== null) return malformed(r.failed);
  // TLS 1.2 and earlier may omit the extensions altogether (RFC 5246 § 7.4.1.2).
  if (r.left === 0) return { kind: 'hello', sni: null };
  const extensions = r.vector(2, 0, 0xffff);
  if (r.failed !== null || extensions === null) return malformed(r.failed ?? 'no extensions');
  if (r.left !== 0) return malformed('bytes after the extensions');
  const e = new Reader(extensions);
  const seen = new Set<number>();
  let sni: string | null = null;
  while (e.left > 0 && e.failed === null) {
    const type = e.u16();
    const data = e.vector(2, 0, 0xffff);
    if (e.failed !== null || data === null) break;
    // RFC 8446 § 4.2: no extension type appears twice; servers differ in which one they read.
    if (seen.has(type)) return malformed(`extension ${type} appears twice`);
    seen.add(type);
    if (type === ECH) {
      return {
        kind: 'unjudgeable',
        reason: 'it uses Encrypted Client Hello, which hides the server it names',
      };
    }
    if (type !== SERVER_NAME) continue;
    const named = serverName(new Reader(data));
    if (named.kind !== 'hello') return named;
    sni = named.sni;
  }
  if (e.failed !== null) return malformed(e.failed);
  return { kind: 'hello', sni };
}

/** RFC 6066 § 3: ServerNameList, one host_name (type 0), an ASCII name, never an IP literal. */
function serverName(r: Reader): Hello {
  const list = r.vector(2, 1, 0xffff);
  if (r.failed !== null || list === null || r.left !== 0) {
    return malformed(r.failed ?? 'bytes after the server name list');
  }
  const l = new Reader(list);
  const names: string[] = [];
  while (l.left > 0 && l.failed === null) {
    const type = l.u8();
    const name = l.vector(2, 1, 0xffff);
    if (l.failed !== null || name === null) break;
    if (type !== 0) return { kind: 'unjudgeable', reason: `it names a server of type ${type}` };
    names.push(name.toString('latin1'));
  }
  if (l.failed !== null) return malformed(l.failed);
  if (names.length > 1) {
    return { kind: 'unjudgeable', reason: `it names ${names.length} servers` };
  }
  const sni = names[0] as string;
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/.test(sni)) {
    return malformed(`server name ${JSON.stringify(sni.slice(0, 100))} is not a host name`);
  }
  // A URL parser reads a numeric last label as IPv4 (WHATWG URL § host parsing): 127.1 too.
  const last = sni.replace(/\.$/, '').split('.').pop() as string;
  if (isIP(sni) !== 0 || /^(0x[0-9a-f]*|[0-9]+)$/i.test(last)) {
    return malformed(`server name ${sni} is an IP address (RFC 6066 § 3 allows host names only)`);
  }
  return { kind: 'hello', sni };
}

/** A bounds-checked reader: the first overrun sets `failed`, later reads return null/0. */
class Reader {
  failed: string | null = null;
  #at = 0;

  constructor(private readonly buf: Buffer) {}

  get left(): number {
    return this.buf.length - this.#at;
  }

  #take(n: number): Buffer | null {
    if (this.failed !== null) return null;
    if (n > this.left) {
      this.failed = 'a length runs past the end of the ClientHello';
      return null;
    }
    const out = this.buf.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }

  skip(n: number): void {
    this.#take(n);
  }

  u8(): number {
    return this.#take(1)?.[0] ?? 0;
  }

  u16(): number {
    return this.#take(2)?.readUInt16BE(0) ?? 0;
  }

  /** A vector with a `size`-byte length prefix, its length within [min, max] (RFC 8446 § 3.4). */
  vector(size: 1 | 2, min: number, max: number): Buffer | null {
    const length = size === 1 ? this.u8() : this.u16();
    if (this.failed !== null) return null;
    if (length < min || length > max) {
      this.failed = `a vector of ${length} bytes where ${min}..${max} are allowed`;
      return null;
    }
    return this.#take(length);
  }
}
