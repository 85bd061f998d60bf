/**
 * Special-purpose address ranges (RFC 6890 and its updates) and the IPv6 forms that carry
 * an IPv4 address. Addresses arrive here already parsed: IPv4 as an unsigned 32-bit number,
 * IPv6 as eight 16-bit groups. Pure tables and arithmetic, no parsing, no I/O.
 */

export type AddressCategory =
  | 'public'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved';

/** Which category to report when one address embeds several; any non-public one forbids. */
const SEVERITY: Readonly<Record<AddressCategory, number>> = {
  public: 0,
  reserved: 1,
  multicast: 2,
  broadcast: 3,
  cgnat: 4,
  private: 5,
  'link-local': 6,
  unspecified: 7,
  loopback: 8,
};

export function worse(a: AddressCategory, b: AddressCategory): AddressCategory {
  return SEVERITY[b] > SEVERITY[a] ? b : a;
}

interface V4Range {
  readonly base: number;
  readonly mask: number;
  readonly category: AddressCategory;
}

function v4(a: number, b: number, c: number, d: number, prefix: number, category: AddressCategory) {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (((a << 24) | (b << 16) | (c << 8) | d) & mask) >>> 0, mask, category };
}

/** First match wins: the broadcast address sits inside 240.0.0.0/4. */
const V4_RANGES: readonly V4Range[] = [
  v4(255, 255, 255, 255, 32, 'broadcast'), // RFC 919
  v4(0, 0, 0, 0, 8, 'unspecified'), // "this network"; Linux connects 0.0.0.0 to itself
  v4(127, 0, 0, 0, 8, 'loopback'),
  v4(10, 0, 0, 0, 8, 'private'), // RFC 1918
  v4(172, 16, 0, 0, 12, 'private'),
  v4(192, 168, 0, 0, 16, 'private'),
  v4(100, 64, 0, 0, 10, 'cgnat'), // RFC 6598
  v4(169, 254, 0, 0, 16, 'link-local'), // RFC 3927; cloud metadata at 169.254.169.254
  v4(224, 0, 0, 0, 4, 'multicast'),
  v4(240, 0, 0, 0, 4, 'reserved'), // RFC 1112 "future use"
  v4(192, 0, 0, 0, 24, 'reserved'), // IETF protocol assignments, RFC 6890
  v4(198, 18, 0, 0, 15, 'reserved'), // benchmarking, RFC 2544
  v4(192, 0, 2, 0, 24, 'reserved'), // documentation, RFC 5737
  v4(198, 51, 100, 0, 24, 'reserved'),
  v4(203, 0, 113, 0, 24, 'reserved'),
];

export function classifyV4(ip: number): AddressCategory {
  for (const r of V4_RANGES) if ((ip & r.mask) >>> 0 === r.base) return r.category;
  return 'public';
}

interface V6Range {
  readonly groups: readonly number[];
  readonly prefix: number;
  readonly category: AddressCategory;
}

/** Prefixes are given by their leading groups; unlisted trailing groups are zero. */
const V6_RANGES: readonly V6Range[] = [
  { groups: [0xfc00], prefix: 7, category: 'private' }, // unique local, RFC 4193
  { groups: [0xfe80], prefix: 10, category: 'link-local' }, // RFC 4291
  { groups: [0xfec0], prefix: 10, category: 'reserved' }, // site-local, deprecated by RFC 3879
  { groups: [0xff00], prefix: 8, category: 'multicast' }, // RFC 4291
  { groups: [0x0100, 0, 0, 0], prefix: 64, category: 'reserved' }, // discard-only, RFC 6666
  { groups: [0x2001, 0x0db8], prefix: 32, category: 'reserved' }, // documentation, RFC 3849
  { groups: [0x3fff], prefix: 20, category: 'reserved' }, // documentation, RFC 9637
  { groups: [0x2001, 0x0002, 0], prefix: 48, category: 'reserved' }, // benchmarking, RFC 5180
];

function inPrefix(h: readonly number[], r: V6Range): boolean {
  let bits = r.prefix;
  for (let i = 0; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if (((h[i] ?? 0) & mask) !== (r.groups[i] ?? 0)) return false;
  }
  return true;
}

/** For IPv6 addresses that do not embed IPv4 (see `embeddedV4`). */
export function classifyV6(h: readonly number[]): AddressCategory {
  if (h.every((g, i) => g === 0 || (i === 7 && g === 1))) {
    return h[7] === 0 ? 'unspecified' : 'loopback'; // RFC 4291 §2.5.2, §2.5.3
  }
  for (const r of V6_RANGES) if (inPrefix(h, r)) return r.category;
  // Only 2000::/3 is allocated for global unicast (RFC 4291 §2.4); the rest is not routable.
  return ((h[0] ?? 0) & 0xe000) === 0x2000 ? 'public' : 'reserved';
}

export interface Embedding {
  readonly kind: string;
  /** IPv4 addresses the packet would really reach (Teredo names two). */
  readonly v4: readonly number[];
  /** The prefix itself is not global, so only an IPv6 allowPrivate entry can allow it. */
  readonly localPrefix: boolean;
}

function join(hi: number, lo: number): number {
  return ((hi << 16) | lo) >>> 0;
}

/**
 * The IPv4 destination(s) inside an IPv6 address, or undefined when there are none. `::` and
 * `::1` are not IPv4-compatible addresses (RFC 4291 §2.5.5.1) and go to `classifyV6`.
 */
export function embeddedV4(h: readonly number[]): Embedding | undefined {
  const [h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0, h7 = 0] = h;
  const last = join(h6, h7);
  if ((h0 | h1 | h2 | h3 | h4) === 0) {
    if (h5 === 0xffff) return { kind: 'IPv4-mapped (RFC 4291)', v4: [last], localPrefix: false };
    if (h5 === 0 && last > 1) {
      return { kind: 'IPv4-compatible (RFC 4291)', v4: [last], localPrefix: false };
    }
    return undefined;
  }
  if (h0 === 0x64 && h1 === 0xff9b) {
    if ((h2 | h3 | h4 | h5) === 0) {
      return { kind: 'NAT64 (RFC 6052)', v4: [last], localPrefix: false };
    }
    // RFC 8215 local-use prefix: the /96 layout is assumed, but RFC 6052 §2.2 allows others,
    // so the address is never allowed just because its last 32 bits look public.
    if (h2 === 1) return { kind: 'NAT64 local-use (RFC 8215)', v4: [last], localPrefix: true };
    return undefined;
  }
  if (h0 === 0x2002) return { kind: '6to4 (RFC 3056)', v4: [join(h1, h2)], localPrefix: false };
  if (h0 === 0x2001 && h1 === 0) {
    // Teredo (RFC 4380): server in bits 32-63, client obfuscated in the last 32 bits.
    return { kind: 'Teredo (RFC 4380)', v4: [join(h2, h3), ~last >>> 0], localPrefix: false };
  }
  return undefined;
}
