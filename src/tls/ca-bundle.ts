import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import type { TrajgateError } from '../errors.js';
import { errnoCode } from '../errors.js';
import { osError } from '../os-error.js';

/** Beside ca.pem: the system's roots and trajgate's CA, for clients that trust one file only. */
export const CA_BUNDLE = 'ca-bundle.pem';

/** Where distributions keep their bundle (Debian and Alpine, Fedora and RHEL, openSUSE, macOS). */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/**
 * The roots a client trusts without trajgate: the system's bundle, else Node's (Mozilla's).
 * SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT, npm's cafile and
 * GRPC_DEFAULT_SSL_ROOTS_FILE_PATH replace the roots they name rather than add to them: without these, every host that is not
 * intercepted (a blind tunnel to the real server) would fail to verify.
 */
function systemRoots(): string {
  for (const file of SYSTEM_BUNDLES) {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      // not this distribution's place
    }
  }
  return rootCertificates.join('\n');
}

/**
 * Writes `dir/ca-bundle.pem` (the system's roots, then trajgate's CA) unless it already holds
 * this CA; returns its path. Written whole and renamed, so a client never reads half of it.
 */
export function ensureCaBundle(dir: string, caPem: string): string {
  const path = join(dir, CA_BUNDLE);
  try {
    if (readFileSync(path, 'utf8').includes(caPem.trim())) return path;
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw bundleError(path, err);
  }
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${systemRoots().trimEnd()}\n# trajgate local CA\n${caPem.trim()}\n`, {
      mode: 0o644,
    });
    renameSync(tmp, path);
  } catch (err) {
    throw bundleError(path, err);
  }
  return path;
}

function bundleError(path: string, err: unknown): TrajgateError {
  return osError('E_FILE_WRITE', err, {
    op: 'write',
    path,
    what: "the CA bundle (the system's roots and trajgate's CA)",
  });
}
