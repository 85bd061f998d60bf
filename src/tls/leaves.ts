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
 * Per-host leaf certificates for TLS interception, signed by the local CA. One leaf key is
 * generated when the cache is made (RSA key generation takes ~200 ms: never on a request's
 * path); each host's certificate costs a native signature (~1 ms) and is cached, up to `max`
 * hosts (least recently used out first), until it nears expiry.
 */
export class LeafCache {
  readonly #ca: Ca;
  readonly #key: KeyObject;
  readonly #keyPem: string;
  readonly #max: number;
  readonly #contexts = new Map<string, { context: SecureContext; renewAt: number }>();

  constructor(ca: Ca, max = 1_000) {
    this.#ca = ca;
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.#key = privateKey;
    this.#keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    this.#max = max;
  }

  /** The TLS context presenting a certificate for `host` (a DNS name or an IP address). */
  context(host: string, now = Date.now()): SecureContext {
    const hit = this.#contexts.get(host);
    if (hit && hit.renewAt > now) {
      this.#contexts.delete(host);
      this.#contexts.set(host, hit);
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
    const context = createSecureContext({ key: this.#keyPem, cert: cert + this.#ca.certPem });
    if (this.#contexts.size >= this.#max)
      this.#contexts.delete(this.#contexts.keys().next().value as string);
    this.#contexts.set(host, { context, renewAt: now + LIFETIME - MARGIN });
    return context;
  }
}
