/**
 * Decides whether an address the proxy is about to connect to is a forbidden (non-public)
 * destination — the SSRF guard after DNS resolution. Pure: no DNS, no sockets.
 */
import { BlockList, isIP } from 'node:net';
import { parseCidr } from '../config/formats.js';
import { TrajgateError } from '../errors.js';
import {
  classifyV4,
  classifyV6,
  embeddedV4,
  worse,
  type AddressCategory,
  type Embedding,
} from './ip-ranges.js';

export type { AddressCategory } from './ip-ranges.js';

export interface AddressVerdict {
  readonly allowed: boolean;
  readonly category: AddressCategory | 'invalid';
  /** Canonical form when the input parsed, else the input as given. */
  readonly address: string;
  /** For IPv6 that embeds IPv4: the mechanism and the IPv4 address(es) it reaches. */
  readonly note?: string;
}

type ParsedIp =
  | { readonly family: 4; readonly value: number; readonly canonical: string }
  | { readonly family: 6; readonly groups: readonly number[]; readonly canonical: string };

/** Characters of the inet_aton spellings the WHATWG URL parser turns into IPv4. */
const ODD_V4 = /^[0-9a-fx.]+$/i;

/** Caller has checked `isIP(text) === 4`, which admits only plain dotted decimal. */
function parseDottedQuad(text: string): number {
  let value = 0;
  let octet = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      value = value * 256 + octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 48);
    }
  }
  return value * 256 + octet;
}

function formatV4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

function hexGroups(part: string): number[] {
  const out: number[] = [];
  if (part === '') return out;
  for (const g of part.split(':')) {
    if (g.includes('.')) {
      const v = parseDottedQuad(g);
      out.push(v >>> 16, v & 0xffff);
    } else {
      out.push(parseInt(g, 16));
    }
  }
  return out;
}

/** Caller has checked `isIP(text) === 6` and that there is no zone id. */
function parseV6(text: string): number[] {
  const gap = text.indexOf('::');
  if (gap < 0) return hexGroups(text);
  const groups = hexGroups(text.slice(0, gap));
  const tail = hexGroups(text.slice(gap + 2));
  while (groups.length + tail.length < 8) groups.push(0);
  groups.push(...tail);
  return groups;
}

/** RFC 5952 §4: lower-case hex, first longest run of two or more zero groups as `::`. */
function formatV6(groups: readonly number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0, run = 0; i < 8; i++) {
    run = groups[i] === 0 ? run + 1 : 0;
    if (run > bestLen) {
      best = i - run + 1;
      bestLen = run;
    }
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLen, 8)}`;
}

/**
 * An IP literal with its canonical text, or null if `text` is not one: dotted quad for IPv4
 * (odd spellings such as `127.1`, `0x7f.0.0.1`, `2130706433` read as the WHATWG URL parser
 * reads them), RFC 5952 without brackets for IPv6. Zone ids are refused.
 */
export function parseIp(text: string): ParsedIp | null {
  const bracketed = text.startsWith('[') && text.endsWith(']');
  const bare = bracketed ? text.slice(1, -1) : text;
  const version = isIP(bare);
  if (version === 6) {
    if (bare.includes('%')) return null; // a zone id names an interface, not a destination
    const groups = parseV6(bare);
    return { family: 6, groups, canonical: formatV6(groups) };
  }
  if (bracketed) return null;
  if (version === 4) return { family: 4, value: parseDottedQuad(bare), canonical: bare };
  if (!ODD_V4.test(bare)) return null; // also keeps `/`, `@`, `:` etc. away from the URL parser
  let host: string;
  try {
    host = new URL(`http://${bare}/`).hostname;
  } catch {
    return null;
  }
  if (isIP(host) !== 4) return null; // the parser accepted it as a host name
  return { family: 4, value: parseDottedQuad(host), canonical: host };
}

function embeddingNote(e: Embedding): string {
  return `${e.kind} ${e.v4.map(formatV4).join(', ')}`;
}

/** Refuses non-public destinations except those covered by the `allowPrivate` CIDRs. */
export class AddressPolicy {
  readonly #allow = new BlockList();

  constructor(allowPrivate: readonly string[]) {
    for (const text of allowPrivate) {
      const cidr = parseCidr(text);
      if (cidr === undefined) {
        throw new TrajgateError('E_CONFIG_INVALID', `allowPrivate: invalid CIDR "${text}"`);
      }
      this.#allow.addSubnet(cidr.address, cidr.prefix, cidr.family);
    }
  }

  check(address: string): AddressVerdict {
    const ip = parseIp(address);
    if (ip === null) return { allowed: false, category: 'invalid', address };
    if (ip.family === 4) {
      const category = classifyV4(ip.value);
      const allowed = category === 'public' || this.#allow.check(ip.canonical, 'ipv4');
      return { allowed, category, address: ip.canonical };
    }
    const embedding = embeddedV4(ip.groups);
    if (embedding === undefined) {
      const category = classifyV6(ip.groups);
      const allowed = category === 'public' || this.#allow.check(ip.canonical, 'ipv6');
      return { allowed, category, address: ip.canonical };
    }
    let category: AddressCategory = embedding.localPrefix ? 'reserved' : 'public';
    for (const v of embedding.v4) category = worse(category, classifyV4(v));
    const allowed =
      category === 'public' ||
      this.#allow.check(ip.canonical, 'ipv6') ||
      (!embedding.localPrefix && embedding.v4.every((v) => this.#coversV4(v)));
    return { allowed, category, address: ip.canonical, note: embeddingNote(embedding) };
  }

  /** An embedded IPv4 destination is fine if public or itself covered by allowPrivate. */
  #coversV4(value: number): boolean {
    return classifyV4(value) === 'public' || this.#allow.check(formatV4(value), 'ipv4');
  }
}
