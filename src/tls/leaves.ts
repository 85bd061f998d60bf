import { generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import type { SecureContext } from 'node:tls';
import type { Ca } from './ca.js';
import { altName, issueCertificate } from './x509.js';

const DAY = 86_400_000;
/** Leaves live 30 days and are replaced when fewer than 2 are left. */
const LIFETIME = 30 * DAY;
const MARGIN = 2 * DAY;
/**
 * A host's context is made anew this often (same certificate), and with it the session-ticket
 * keys Node gives every context (at random, in memory only): a leaked key opens at most half a
 * day of TLS 1.2 sessions, and tickets older than that are not resumed.
 */
const TICKET_KEYS_MS = DAY / 2;
/** How long a session may be resumed (TLS 1.3 ticket lifetime, RFC 8446 § 4.6.1). */
const SESSION_SECONDS = 3_600;

interface Leaf {
  /** The certificate chain presented: the leaf, then the CA. */
  readonly chain: string;
  readonly renewAt: number;
  context: SecureContext;
  keysUntil: number;
}

/**
 * Per-host leaf certificates for TLS interception, signed by the local CA. One leaf key is
 * generated when the cache is made (RSA key generation takes ~200 ms: never on a request's
 * path); each host's certificate costs a native signature (~1 ms) and is cached, up to `max`
 * hosts (least recently used out first), until it nears expiry.
 *
 * Each context issues session tickets, so an agent that reconnects to a host resumes its TLS
 * session (TLS 1.3 and TLS 1.2 tickets) without a full handshake. Its ticket keys are its own:
 * a ticket one host's context issued is not decrypted by another's, so it resumes nothing on a
 * tunnel to another host (and the interceptor checks a resumed session's server name).
 */
export class LeafCache {
  readonly #ca: Ca;
  readonly #key: KeyObject;
  readonly #keyPem: string;
  readonly #max: number;
  readonly #leaves = new Map<string, Leaf>();

  constructor(ca: Ca, max = 1_000) {
    this.#ca = ca;
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.#key = privateKey;
    this.#keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    this.#max = max;
  }

  /** The TLS context presenting a certificate for `host` (a DNS name or an IP address). */
  context(host: string, now = Date.now()): SecureContext {
    const hit = this.#leaves.get(host);
    if (hit && hit.renewAt > now) {
      this.#leaves.delete(host);
      this.#leaves.set(host, hit);
      if (hit.keysUntil <= now) {
        hit.context = this.#secure(hit.chain);
        hit.keysUntil = now + TICKET_KEYS_MS;
      }
      return hit.context;
    }
    const cert = issueCertificate(
      {
        subject: host,
        issuer: this.#ca.cert,
        publicKey: this.#key,
        notBefore: new Date(now - DAY),
        notAfter: new Date(now + LIFETIME),
        extensions: [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: [altName(host)] },
        ],
      },
      this.#ca.key,
    );
    const chain = cert + this.#ca.certPem;
    const leaf = {
      chain,
      renewAt: now + LIFETIME - MARGIN,
      context: this.#secure(chain),
      keysUntil: now + TICKET_KEYS_MS,
    };
    if (this.#leaves.size >= this.#max)
      this.#leaves.delete(this.#leaves.keys().next().value as string);
    this.#leaves.set(host, leaf);
    return leaf.context;
  }

  /**
   * A context for one connection only: `host`'s certificate with ticket keys of its own, so it
   * resumes no session and none it starts is resumed (for a hello whose name only OpenSSL reads,
   * which a resumed handshake would not check).
   */
  unresumable(host: string, now = Date.now()): SecureContext {
    this.context(host, now);
    return this.#secure((this.#leaves.get(host) as Leaf).chain);
  }

  #secure(chain: string): SecureContext {
    return createSecureContext({ key: this.#keyPem, cert: chain, sessionTimeout: SESSION_SECONDS });
  }
}
