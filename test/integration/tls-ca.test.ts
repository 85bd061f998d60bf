import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Ca } from '../../src/tls/ca.js';
import { CA_CERT, CA_KEY, initCa, loadCa, trustInstructions } from '../../src/tls/ca.js';
import { CA_BUNDLE } from '../../src/tls/ca-bundle.js';
import { LeafCache } from '../../src/tls/leaves.js';
import { runCli } from '../helpers/cli.js';
import { presented, resumesOn } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/** The local CA (`trajgate ca init|show`) and the per-host leaf certificates it signs. */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const mode = (file: string) => statSync(file).mode & 0o777;
const opensslFingerprint = (file: string) =>
  /Fingerprint=([0-9A-F:]+)/.exec(
    execFileSync('openssl', ['x509', '-in', file, '-noout', '-fingerprint', '-sha256'], {
      encoding: 'utf8',
    }),
  )?.[1];

describe('trajgate ca init', () => {
  it('creates ca.pem (0644) and ca-key.pem (0600) in a new folder and prints how to trust it', () => {
    const dir = join(tempDir(), 'certs');
    const r = runCli(['ca', 'init', '--dir', dir]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`created a CA in ${dir}`);
    expect(mode(join(dir, CA_KEY))).toBe(0o600);
    expect(mode(join(dir, CA_CERT))).toBe(0o644);
    expect(mode(dir)).toBe(0o700);
    const cert = new X509Certificate(readFileSync(join(dir, CA_CERT)));
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=trajgate local CA');
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    // Valid now, for years, and the key in ca-key.pem is the certificate's.
    expect(Date.parse(cert.validFrom)).toBeLessThan(Date.now());
    expect(Date.parse(cert.validTo)).toBeGreaterThan(Date.now() + 9 * 365 * DAY);
    expect(cert.checkPrivateKey(loadCa(dir).key)).toBe(true);
    // openssl agrees it is a CA that may only sign certificates (and CRLs).
    const text = execFileSync('openssl', ['x509', '-in', join(dir, CA_CERT), '-noout', '-text'], {
      encoding: 'utf8',
    });
    expect(text).toMatch(/Basic Constraints: critical\s+CA:TRUE/);
    expect(text).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
  });

  it('refuses to overwrite an existing CA without --force (exit 2, says why), keeps the files', () => {
    const dir = join(tempDir(), 'certs');
    expect(runCli(['ca', 'init', '--dir', dir]).status).toBe(0);
    const before = readFileSync(join(dir, CA_KEY), 'utf8');
    const again = runCli(['ca', 'init', '--dir', dir]);
    expect(again.status).toBe(2);
    expect(again.stderr).toBe(
      `trajgate: EEXIST: cannot create a CA in ${dir}: it already holds one (ca.pem, ca-key.pem); use --force to replace it\n`,
    );
    expect(readFileSync(join(dir, CA_KEY), 'utf8')).toBe(before);
  });

  it('refuses when only one of the two files is there', () => {
    const dir = tempDir();
    writeFileSync(join(dir, CA_KEY), 'not a key', { mode: 0o600 });
    const r = runCli(['ca', 'init', '--dir', dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('use --force to replace it');
    expect(existsSync(join(dir, CA_CERT))).toBe(false);
    expect(readFileSync(join(dir, CA_KEY), 'utf8')).toBe('not a key');
  });

  it('--force replaces it: a new key and a new fingerprint', () => {
    const dir = join(tempDir(), 'certs');
    const first = initCa(dir);
    const r = runCli(['ca', 'init', '--dir', dir, '--force']);
    expect(r.status).toBe(0);
    const second = loadCa(dir);
    expect(second.fingerprint).not.toBe(first.fingerprint);
    expect(mode(join(dir, CA_KEY))).toBe(0o600);
  });

  // A file's mode applies only when it is created: --force must not reuse a readable key file.
  it('--force leaves the new key at 0600 even if the old key file was readable', () => {
    const dir = join(tempDir(), 'certs');
    initCa(dir);
    chmodSync(join(dir, CA_KEY), 0o644);
    expect(runCli(['ca', 'init', '--dir', dir, '--force']).status).toBe(0);
    expect(mode(join(dir, CA_KEY))).toBe(0o600);
  });

  it('writes ca-bundle.pem beside it: the system roots and the CA, renewed by --force', () => {
    const dir = join(tempDir(), 'certs');
    expect(runCli(['ca', 'init', '--dir', dir]).status).toBe(0);
    const bundle = () => readFileSync(join(dir, CA_BUNDLE), 'utf8');
    expect(mode(join(dir, CA_BUNDLE))).toBe(0o644);
    expect(bundle()).toContain(readFileSync(join(dir, CA_CERT), 'utf8').trim());
    // The system's roots come first (a client that replaces its roots with it loses none).
    const system = readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').trim();
    expect(bundle().startsWith(system)).toBe(true);
    expect(runCli(['ca', 'init', '--dir', dir, '--force']).status).toBe(0);
    expect(bundle()).toContain(readFileSync(join(dir, CA_CERT), 'utf8').trim());
    expect(bundle().split('BEGIN CERTIFICATE').length).toBe(
      system.split('BEGIN CERTIFICATE').length + 1,
    );
  });

  it('a stray argument or unknown action is a usage error', () => {
    for (const args of [['ca'], ['ca', 'make'], ['ca', 'show', 'extra']]) {
      const r = runCli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain('usage: trajgate ca init|show');
    }
  });
});

describe('trajgate ca show', () => {
  let dir: string;
  beforeAll(() => {
    dir = join(tempDir(), 'certs');
    initCa(dir);
  });

  it('prints the path, the SHA-256 fingerprint openssl computes, and the trust instructions', () => {
    const r = runCli(['ca', 'show', '--dir', dir]);
    expect(r.status).toBe(0);
    const certPath = join(dir, CA_CERT);
    expect(r.stdout).toContain(`CA certificate: ${certPath}\n`);
    const fingerprint = opensslFingerprint(certPath);
    expect(fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(r.stdout).toContain(`SHA-256 fingerprint: ${fingerprint}\n`);
    expect(new X509Certificate(readFileSync(certPath)).fingerprint256).toBe(fingerprint);
    for (const how of [
      'NODE_EXTRA_CA_CERTS',
      'SSL_CERT_FILE',
      'REQUESTS_CA_BUNDLE',
      'update-ca-certificates',
    ]) {
      expect(r.stdout).toContain(how);
    }
    expect(r.stdout).toBe(trustInstructions(loadCa(dir)) + '\n');
    // It only reads: the key is untouched and nothing is printed about creating anything.
    expect(r.stdout).not.toContain('created');
  });

  it('finds the CA through --config (tls.ca relative to the config file)', () => {
    const root = tempDir();
    initCa(join(root, 'my-certs'));
    writeFileSync(join(root, 'c.yaml'), 'version: 1\ntls: { ca: ./my-certs }\n');
    const r = runCli(['ca', 'show', '--config', join(root, 'c.yaml')], { cwd: '/' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`CA certificate: ${join(root, 'my-certs', CA_CERT)}`);
  });

  it('with no CA says how to make one (exit 1)', () => {
    const missing = join(tempDir(), 'none');
    const r = runCli(['ca', 'show', '--dir', missing]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(
      `trajgate: no CA in ${missing}: run \`trajgate ca init --dir ${missing}\`\n`,
    );
  });
});

describe('LeafCache', () => {
  let ca: Ca;
  let caCert: X509Certificate;
  let leaves: LeafCache;
  beforeAll(() => {
    const dir = join(tempDir(), 'certs');
    ca = initCa(dir);
    caCert = new X509Certificate(ca.certPem);
    leaves = new LeafCache(ca, 100);
  });

  const rows = [
    { host: 'packages.example.com', san: 'DNS:packages.example.com', check: 'host' },
    { host: 'xn--bcher-kva.example', san: 'DNS:xn--bcher-kva.example', check: 'host' },
    { host: '127.0.0.1', san: 'IP Address:127.0.0.1', check: 'ip' },
    { host: '::1', san: 'IP Address:0:0:0:0:0:0:0:1', check: 'ip' },
  ] as const;

  it.each(rows)('a leaf for $host: signed by the CA, SAN $san, server auth', async (row) => {
    const { leaf, chain } = await presented(leaves.context(row.host));
    expect(leaf.subjectAltName).toBe(row.san);
    expect(leaf.subject).toBe(`CN=${row.host}`);
    expect(leaf.ca).toBe(false);
    expect(leaf.checkIssued(caCert)).toBe(true);
    expect(leaf.verify(caCert.publicKey)).toBe(true);
    if (row.check === 'host') expect(leaf.checkHost(row.host)).toBe(row.host);
    else expect(leaf.checkIP(row.host)).toBe(row.host);
    expect(leaf.keyUsage).toContain('1.3.6.1.5.5.7.3.1'); // extKeyUsage serverAuth
    expect(Date.parse(leaf.validFrom)).toBeLessThan(Date.now());
    expect(Date.parse(leaf.validTo)).toBeGreaterThan(Date.now() + 20 * DAY);
    // The CA travels with the leaf so clients that trust it can build the chain.
    expect(chain.map((c) => c.fingerprint256)).toEqual([leaf.fingerprint256, ca.fingerprint]);
    // And openssl, a second opinion, verifies it for its purpose against ca.pem alone.
    const dir = tempDir();
    writeFileSync(join(dir, 'leaf.pem'), leaf.toString());
    const args = ['verify', '-CAfile', ca.certPath, '-purpose', 'sslserver'];
    args.push(row.check === 'host' ? '-verify_hostname' : '-verify_ip', row.host);
    expect(execFileSync('openssl', [...args, join(dir, 'leaf.pem')], { encoding: 'utf8' })).toBe(
      `${join(dir, 'leaf.pem')}: OK\n`,
    );
  });

  it('every leaf uses the one shared key and has its own positive serial', async () => {
    const a = (await presented(leaves.context('a.example'))).leaf;
    const b = (await presented(leaves.context('b.example'))).leaf;
    expect(a.publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      b.publicKey.export({ type: 'spki', format: 'der' }),
    );
    expect(a.serialNumber).not.toBe(b.serialNumber);
    for (const serial of [a.serialNumber, b.serialNumber]) {
      expect(serial).toMatch(/^[0-9A-F]{32}$/i); // 16 octets, no leading zero octet
      const first = Number.parseInt(serial.slice(0, 2), 16);
      expect(first).toBeLessThan(0x80); // positive
      expect(first).toBeGreaterThanOrEqual(0x40); // minimal DER
    }
  });

  it('caches per host: the same certificate until it nears expiry, then a new one', async () => {
    const cache = new LeafCache(ca, 10);
    const t0 = Date.now();
    const leafAt = async (now: number) =>
      (await presented(cache.context('renew.example', now))).leaf;
    const first = await leafAt(t0);
    expect(cache.context('renew.example', t0 + 1_000)).toBe(cache.context('renew.example', t0));
    expect((await leafAt(t0 + 27 * DAY)).fingerprint256).toBe(first.fingerprint256);
    // 30-day leaves are replaced once fewer than 2 days are left.
    const later = t0 + 28 * DAY + 1;
    const fresh = await leafAt(later);
    expect(fresh.fingerprint256).not.toBe(first.fingerprint256);
    expect((await leafAt(later + 1_000)).fingerprint256).toBe(fresh.fingerprint256);
    expect(Date.parse(fresh.validTo)).toBeGreaterThan(Date.parse(first.validTo) + 27 * DAY);
    expect(Date.parse(fresh.validFrom)).toBeLessThanOrEqual(later);
    expect(fresh.checkIssued(caCert)).toBe(true);
  });

  it("session tickets: resumed on the same context, never on another host's, nor after 12 h", async () => {
    const cache = new LeafCache(ca, 10);
    const t0 = Date.now();
    const a = cache.context('a.example', t0);
    expect(await resumesOn(a, a, ca.certPem, 'a.example')).toBe(true);
    expect(
      await resumesOn(a, cache.context('a.example', t0 + 11 * HOUR), ca.certPem, 'a.example'),
    ).toBe(true);
    // Each host's context has ticket keys of its own.
    const b = cache.context('b.example', t0);
    expect(await resumesOn(a, b, ca.certPem, 'a.example')).toBe(false);
    // Twelve hours on, the same certificate comes with new ticket keys.
    const rotated = cache.context('a.example', t0 + 12 * HOUR + 1);
    expect(rotated).not.toBe(a);
    expect((await presented(rotated)).leaf.fingerprint256).toBe(
      (await presented(a)).leaf.fingerprint256,
    );
    expect(await resumesOn(a, rotated, ca.certPem, 'a.example')).toBe(false);
    expect(await resumesOn(rotated, rotated, ca.certPem, 'a.example')).toBe(true);
    // A context for one connection: each is new, so none resumes what another started.
    const once = () => cache.unresumable('a.example', t0 + 12 * HOUR + 2);
    expect(await resumesOn(once(), once(), ca.certPem, 'a.example')).toBe(false);
    expect(await resumesOn(rotated, once(), ca.certPem, 'a.example')).toBe(false);
  });

  it('is bounded: it keeps the max most recently used hosts, least recently used out first', () => {
    const cache = new LeafCache(ca, 3);
    const a = cache.context('a.example');
    const b = cache.context('b.example');
    const c = cache.context('c.example');
    expect(cache.context('a.example')).toBe(a); // a is now the most recently used
    const d = cache.context('d.example'); // evicts b
    // Hits evict nothing: c, d and a are the three kept, b comes back as a new certificate.
    expect(cache.context('c.example')).toBe(c);
    expect(cache.context('d.example')).toBe(d);
    expect(cache.context('a.example')).toBe(a);
    expect(cache.context('b.example')).not.toBe(b);
    const flood = Array.from({ length: 50 }, (_, i) => cache.context(`host-${i}.example`));
    for (const i of [47, 48, 49]) expect(cache.context(`host-${i}.example`)).toBe(flood[i]);
    expect(cache.context('host-46.example')).not.toBe(flood[46]);
    expect(cache.context('a.example')).not.toBe(a);
  });
});
