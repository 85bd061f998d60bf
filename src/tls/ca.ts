import { createHash, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type forge from 'node-forge';
import { errnoCode, TrajgateError } from '../errors.js';
import { osError, systemMessage } from '../os-error.js';
import { CA_BUNDLE, ensureCaBundle } from './ca-bundle.js';
import { readCaFile } from './ca-read.js';
import { issueCertificate, nodeForge } from './x509.js';

export const CA_CERT = 'ca.pem';
export const CA_KEY = 'ca-key.pem';

export interface Ca {
  readonly certPath: string;
  readonly certPem: string;
  readonly cert: forge.pki.Certificate;
  readonly key: KeyObject;
  /** SHA-256 of the DER certificate, colon-separated hex (as browsers and openssl show it). */
  readonly fingerprint: string;
}

const DAY = 86_400_000;

/**
 * Creates the local CA in `dir`: an RSA 2048 key from node:crypto (mode 0600) and a
 * self-signed certificate valid for 10 years, allowed only to sign certificates. An existing
 * CA is never overwritten without `force`.
 */
export function initCa(dir: string, force = false): Ca {
  const certPath = join(dir, CA_CERT);
  const keyPath = join(dir, CA_KEY);
  if (!force && (existsSync(certPath) || existsSync(keyPath))) throw holdsCa(dir);
  const place = { key: '--dir' };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw osError('E_FILE_WRITE', err, {
      op: 'create',
      what: "the CA's folder",
      path: dir,
      folder: true,
      ...place,
    });
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Date.now();
  const pem = issueCertificate(
    {
      subject: 'trajgate local CA',
      issuer: null,
      publicKey,
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 3650 * DAY),
      extensions: [
        { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
        { name: 'subjectKeyIdentifier' },
      ],
    },
    privateKey,
  );
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' });
  try {
    // A mode only applies when a file is created: remove the old key so the new one is 0600.
    if (force) rmSync(keyPath, { force: true });
    // `wx`: a CA another `ca init` made since the check above is not overwritten either.
    writeFileSync(keyPath, key, { mode: 0o600, flag: force ? 'w' : 'wx' });
    writeFileSync(certPath, pem, { mode: 0o644, flag: force ? 'w' : 'wx' });
  } catch (err) {
    if (errnoCode(err) === 'EEXIST') throw holdsCa(dir);
    throw new TrajgateError('E_FILE_WRITE', systemMessage(err, place));
  }
  ensureCaBundle(dir, pem);
  return loadCa(dir);
}

/** An existing CA is kept: said as the EEXIST it is (os-error.ts's form), with the way past it. */
function holdsCa(dir: string): TrajgateError {
  return new TrajgateError(
    'E_USAGE',
    `EEXIST: cannot create a CA in ${dir}: it already holds one (${CA_CERT}, ${CA_KEY}); use --force to replace it`,
  );
}

export function loadCa(dir: string): Ca {
  const certPath = join(dir, CA_CERT);
  const certPem = readCaFile(certPath, dir);
  const keyPem = readCaFile(join(dir, CA_KEY), dir);
  const { pki, asn1 } = nodeForge();
  const cert = parsed(certPath, 'certificate', dir, () => pki.certificateFromPem(certPem));
  const key = parsed(join(dir, CA_KEY), 'private key', dir, () => createPrivateKey(keyPem));
  const der = asn1.toDer(pki.certificateToAsn1(cert)).getBytes();
  const hex = createHash('sha256').update(Buffer.from(der, 'binary')).digest('hex').toUpperCase();
  return { certPath, certPem, cert, key, fingerprint: hex.match(/../g)?.join(':') ?? hex };
}

/** One of the CA's files parsed, or E_CONFIG_READ naming it and tls.ca. */
function parsed<T>(path: string, what: string, dir: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new TrajgateError(
      'E_CONFIG_READ',
      `tls.ca: ${path} is not a PEM ${what} (${(err as Error).message}): run \`trajgate ca init --dir ${dir}\` for a new CA`,
    );
  }
}

/**
 * How to make agents trust the CA, for `trajgate ca show`. npm, pip, git and curl's settings
 * replace their CA list rather than add to it, hence the bundle: the system's CAs plus this one.
 */
export function trustInstructions(ca: Ca): string {
  const pem = ca.certPath;
  const bundle = '/etc/ssl/certs/ca-certificates.crt';
  return [
    `CA certificate: ${pem}`,
    `SHA-256 fingerprint: ${ca.fingerprint}`,
    '',
    'Trust it where the agent runs (in a container, mount the file read-only, e.g. at',
    '/etc/trajgate/ca.pem, and use that path below):',
    `  Debian/Ubuntu:   cp ${pem} /usr/local/share/ca-certificates/trajgate.crt && update-ca-certificates`,
    `                   (adds it to ${bundle}, the bundle used below)`,
    `  Node.js:         NODE_EXTRA_CA_CERTS=${pem}`,
    `  npm:             npm config set cafile ${bundle}   (or NPM_CONFIG_CAFILE)`,
    `  pip:             pip install --cert ${bundle} …   (or PIP_CERT=${bundle})`,
    `  git:             git config --global http.sslCAInfo ${bundle}   (or GIT_SSL_CAINFO)`,
    `  curl:            curl --cacert ${bundle} …   (or CURL_CA_BUNDLE=${bundle})`,
    `  OpenSSL:         SSL_CERT_FILE=${bundle}`,
    `  Python requests: REQUESTS_CA_BUNDLE=${bundle}`,
    `  gRPC:            GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=${bundle}   (grpc-js, grpcio: C core)`,
    `npm, pip, git and curl trust only the file named: ${pem} alone works for intercepted hosts`,
    'only; the bundle keeps blind tunnels (hosts not in tls.intercept) working too.',
    `Without installing it: ${join(dirname(pem), CA_BUNDLE)} is the system's roots plus this CA,`,
    'and `trajgate env AGENT` prints every variable above pointing at it.',
  ].join('\n');
}
