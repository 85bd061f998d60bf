import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { AddressVerdict } from './addresses.js';
import { AddressPolicy } from './addresses.js';

/** What the gateway may connect to: the one checked address, or why not. */
export type EgressCheck =
  | { readonly ok: true; readonly address: string }
  /** `denied`: a refusal that counts as a crossing; otherwise an upstream failure (502). */
  | { readonly ok: false; readonly denied: boolean; readonly reason: string };

export type Lookup = (host: string) => Promise<readonly string[]>;

const CACHE_MS = 5_000;
const CACHE_MAX = 1_024;

const systemLookup: Lookup = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Egress safety after the policy: a name is resolved once, every address it resolves to is
 * checked, and the caller connects to the checked address itself, so a second lookup cannot
 * rebind it (DNS rebinding). Non-public addresses are refused unless `allowPrivate` covers
 * them, and the gateway's own ports are never reachable through it, whatever allowPrivate says.
 */
export class Egress {
  #policy: AddressPolicy;
  readonly #lookup: Lookup;
  #timeoutMs: number;
  readonly #cache = new Map<string, { addresses: readonly string[]; until: number }>();
  readonly #verdicts = new Map<string, AddressVerdict>();
  readonly #ownPorts = new Set<number>();
  readonly #localAddresses: Set<string>;

  constructor(options: { allowPrivate: readonly string[]; timeoutMs: number; lookup?: Lookup }) {
    this.#policy = new AddressPolicy(options.allowPrivate);
    this.#lookup = options.lookup ?? systemLookup;
    this.#timeoutMs = options.timeoutMs;
    this.#localAddresses = new Set(
      Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)),
    );
  }

  /** A config reload's `network.allowPrivate` and `limits.connectTimeout`. */
  configure(options: { allowPrivate: readonly string[]; timeoutMs: number }): void {
    this.#policy = new AddressPolicy(options.allowPrivate);
    this.#timeoutMs = options.timeoutMs;
    // Verdicts were the old policy's; resolved addresses are still good.
    this.#verdicts.clear();
  }

  /** Ports trajgate listens on: refused on any local address. */
  addOwnPort(port: number): void {
    this.#ownPorts.add(port);
  }

  /**
   * Checks where `host` may be reached. Answers at once (no promise) when no lookup is needed:
   * an IP literal, or a name resolved within the cache time, which is nearly every request.
   */
  check(host: string, port: number): EgressCheck | Promise<EgressCheck> {
    if (isIP(host) !== 0) return this.#verify([host], port);
    const hit = this.#cache.get(host);
    if (hit !== undefined && hit.until > Date.now()) return this.#verify(hit.addresses, port);
    return this.#resolveAndVerify(host, port);
  }

  /**
   * Why an address already dialled is refused now (a reload narrowed `allowPrivate`), or null:
   * open flows to it are judged again by this.
   */
  refuses(address: string, port: number): string | null {
    const check = this.#verify([address], port);
    return check.ok ? null : check.reason;
  }

  async #resolveAndVerify(host: string, port: number): Promise<EgressCheck> {
    let addresses: readonly string[];
    try {
      addresses = await this.#resolve(host);
    } catch (err) {
      return {
        ok: false,
        denied: false,
        reason: `cannot resolve ${host}: ${(err as Error).message}`,
      };
    }
    if (addresses.length === 0)
      return { ok: false, denied: false, reason: `${host} has no address` };
    return this.#verify(addresses, port);
  }

  /** Every address must be allowed; the first is the one to connect to. */
  #verify(addresses: readonly string[], port: number): EgressCheck {
    for (const address of addresses) {
      const verdict = this.#classify(address);
      if (!verdict.allowed) {
        return {
          ok: false,
          denied: true,
          reason: `private address (${verdict.category} ${verdict.address})`,
        };
      }
      if (this.#ownPorts.has(port) && this.#isLocal(verdict.address, verdict.category)) {
        return {
          ok: false,
          denied: true,
          reason: `trajgate's own port (${verdict.address}:${port})`,
        };
      }
    }
    return { ok: true, address: addresses[0] as string };
  }

  /** Verdicts depend only on the address and allowPrivate: remember the recent ones. */
  #classify(address: string): AddressVerdict {
    let verdict = this.#verdicts.get(address);
    if (verdict === undefined) {
      verdict = this.#policy.check(address);
      if (this.#verdicts.size >= CACHE_MAX)
        this.#verdicts.delete(this.#verdicts.keys().next().value as string);
      this.#verdicts.set(address, verdict);
    }
    return verdict;
  }

  #isLocal(address: string, category: string): boolean {
    return (
      category === 'loopback' || category === 'unspecified' || this.#localAddresses.has(address)
    );
  }

  async #resolve(host: string): Promise<readonly string[]> {
    const now = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`lookup timed out after ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    try {
      const addresses = await Promise.race([this.#lookup(host), timeout]);
      if (this.#cache.size >= CACHE_MAX)
        this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(host, { addresses, until: now + CACHE_MS });
      return addresses;
    } finally {
      clearTimeout(timer);
    }
  }
}
