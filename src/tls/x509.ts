import { createPublicKey, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import type forge from 'node-forge';
import { lazy } from '../lazy.js';

/** Loaded once a certificate is first read or made: a gateway that intercepts nothing never does. */
export const nodeForge = lazy<typeof forge>('node-forge');

/** A name as it goes into subjectAltName: an IP address (type 7) or a DNS name (type 2). */
export function altName(host: string): { type: number; value?: string; ip?: string } {
  return isIP(host) ? { type: 7, ip: host } : { type: 2, value: host };
}

export interface CertificateSpec {
  readonly subject: string;
  readonly issuer: forge.pki.Certificate | null;
  readonly publicKey: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly extensions: readonly object[];
}

/**
 * Builds an X.509 certificate with node-forge and signs it with node:crypto: forge's own RSA
 * signing is pure JavaScript (~30 ms a certificate), the native signature takes ~1 ms, which
 * keeps a first handshake to a new host fast. Returns PEM.
 */
export function issueCertificate(spec: CertificateSpec, signingKey: KeyObject): string {
  const { pki, asn1 } = nodeForge();
  const cert = pki.createCertificate();
  // The subject's key: a public key as is, or the public half of a private one.
  const publicKey =
    spec.publicKey.type === 'public' ? spec.publicKey : createPublicKey(spec.publicKey);
  cert.publicKey = pki.publicKeyFromPem(
    publicKey.export({ type: 'spki', format: 'pem' }) as string,
  );
  // RFC 5280 § 4.1.2.2: a positive serial of up to 20 octets. The first octet is 0x40–0x7f:
  // high bit clear keeps it positive, and never 0x00, which would not be minimal DER (X.690
  // § 8.3.2) before an octet under 0x80 (126 random bits remain).
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x3f) | 0x40;
  cert.serialNumber = serial.toString('hex');
  cert.validity.notBefore = spec.notBefore;
  cert.validity.notAfter = spec.notAfter;
  const subject = [{ name: 'commonName', value: spec.subject }];
  cert.setSubject(subject);
  cert.setIssuer(spec.issuer ? spec.issuer.subject.attributes : subject);
  cert.setExtensions([...spec.extensions]);
  cert.siginfo.algorithmOid = pki.oids.sha256WithRSAEncryption as string;
  cert.signatureOid = pki.oids.sha256WithRSAEncryption as string;
  // getTBSCertificate exists in node-forge but is missing from its type definitions.
  const withTbs = pki as typeof pki & {
    getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1;
  };
  const tbs = asn1.toDer(withTbs.getTBSCertificate(cert)).getBytes();
  cert.signature = sign('sha256', Buffer.from(tbs, 'binary'), signingKey).toString('binary');
  return pki.certificateToPem(cert);
}
