import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { osError } from '../os-error.js';

/** Debian's and Ubuntu's bundle of the system's trusted CAs (update-ca-certificates). */
export const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** A verification failure that more trust would fix (as opposed to expiry or a wrong name). */
const UNTRUSTED = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
]);

let machine: readonly string[] | undefined;

/**
 * The CA certificates upstream TLS is verified against: what the machine trusts (Node's
 * bundled roots, NODE_EXTRA_CA_CERTS, the system bundle where present) plus `tls.upstreamCa`.
 * Passing `ca:` to tls or undici replaces Node's default store, so the list must be whole.
 * The `tls.upstreamCa` files are read now (one that cannot be read is a config error); the
 * machine's part when the list is first asked for, once per process: a gateway that never
 * talks TLS upstream keeps none of it in memory.
 */
export function upstreamTrust(upstreamCa: readonly string[]): () => string[] {
  const configured = upstreamCa.map((file) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw osError('E_CONFIG_READ', err, { op: 'read', path: file, key: 'tls.upstreamCa' });
    }
  });
  return () => {
    machine ??= [
      ...rootCertificates,
      ...optionalPem(process.env.NODE_EXTRA_CA_CERTS),
      ...optionalPem(SYSTEM_BUNDLE),
    ];
    return [...machine, ...configured];
  };
}

/** The reason for a certificate that does not verify, naming the setting that would fix it. */
export function certificateReason(upstream: string, code: string): string {
  return UNTRUSTED.has(code)
    ? `upstream ${upstream} certificate not trusted (${code}): add its CA to tls.upstreamCa or NODE_EXTRA_CA_CERTS`
    : `upstream ${upstream} presented a certificate that does not verify (${code})`;
}

/** A PEM file's text, or nothing when it is unset or unreadable (Node warns and goes on too). */
function optionalPem(file: string | undefined): string[] {
  if (!file) return [];
  try {
    return [readFileSync(file, 'utf8')];
  } catch {
    return [];
  }
}
