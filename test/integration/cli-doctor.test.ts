import { readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCliAsync } from '../helpers/cli.js';
import type { PortedGateway } from '../helpers/child-gateway.js';
import { startPorted } from '../helpers/child-gateway.js';
import { startRedis } from '../helpers/redis.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `trajgate doctor` against gateways started as users start them (the built CLI, port 0
 * copies): green on the example config, and each check failing, with its reason, on a gateway
 * or machine made to break it.
 */
interface Check {
  check: string;
  ok: boolean;
  detail: string;
}

const EXAMPLE = parse(
  readFileSync(join(import.meta.dirname, '../../config/trajgate.example.yaml'), 'utf8'),
) as Record<string, unknown>;

/** The example config's keys, its data in a temp folder: what a user starts from. */
function example(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { workspace: _w, journal: _j, listen: _l, tls, ...rest } = EXAMPLE;
  return {
    ...rest,
    tls: { ...(tls as object), ca: join(tempDir(), 'certs') },
    ...extra,
  };
}

async function doctor(g: PortedGateway, config = g.config) {
  const r = await runCliAsync(['doctor', '--config', config, '--json']);
  const checks = JSON.parse(r.stdout || '[]') as Check[];
  const of = (name: string) => checks.find((c) => c.check === name) as Check;
  return { ...r, checks, of };
}

/** The operator's config of `g` with `keys` over it. */
function operatorCopy(g: PortedGateway, keys: Record<string, unknown>): string {
  const file = join(tempDir(), 'operator.yaml');
  writeFileSync(file, stringify({ ...parse(readFileSync(g.config, 'utf8')), ...keys }));
  return file;
}

describe('trajgate doctor', () => {
  it('is green on the example config, one line per check', async () => {
    const g = await startPorted(example());
    const json = await doctor(g);
    expect(json.status, json.stdout + json.stderr).toBe(0);
    expect(json.checks.map((c) => c.check)).toEqual([
      'unlisted-refused',
      'admin-hidden',
      'tls',
      'journal',
      'store',
      'clock',
      'fd-limit',
      'data-paths',
    ]);
    expect(json.checks.every((c) => c.ok)).toBe(true);
    expect(json.of('unlisted-refused').detail).toMatch(/refused \(403 REVIEW; boundary=network\)/);
    expect(json.of('admin-hidden').detail).toContain(`127.0.0.1:${g.adminPort}/healthz refused`);
    expect(json.of('tls').detail).toBe('skipped: tls.intercept is empty, nothing is intercepted');
    // Again, as text: its own session's counts were reset, so nothing pauses on a second run.
    const text = await runCliAsync(['doctor', '--config', g.config]);
    expect(text.status, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /^ok {3}unlisted-refused: GET http:\/\/127\.0\.0\.1:\d+\/trajgate-doctor refused/,
    );
    expect(text.stdout.trim().split('\n')).toHaveLength(8);
    const session = readFileSync(g.journal, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"type":"pause"'));
    expect(session).toEqual([]);
  });

  it('TLS: curl, git, Node and Python verify the gateway’s CA; given another CA, each fails', async () => {
    const ca = makeLocalCa();
    const g = await startPorted(
      example({
        agents: [
          {
            id: 'doctor',
            token: 'doctor-token-0123456789abcdef',
            workspace: tempDir('trajgate-ws-'),
          },
        ],
        tls: { intercept: ['*.example.org'], ca: ca.dir },
      }),
    );
    const good = await doctor(g);
    expect(good.status, good.stdout + good.stderr).toBe(0);
    for (const name of ['tls-curl', 'tls-git', 'tls-node', 'tls-python'])
      expect(good.of(name).detail, name).toMatch(
        /^verified the gateway's certificate for trajgate-doctor\.example\.org:443 with /,
      );
    expect(good.of('tls-python').detail).toBeTruthy();
    // The operator's trust variables name a CA the gateway does not sign with.
    const wrong = await doctor(
      g,
      operatorCopy(g, { tls: { intercept: ['*.example.org'], ca: makeLocalCa().dir } }),
    );
    expect(wrong.status).toBe(1);
    for (const name of ['tls-curl', 'tls-git', 'tls-node', 'tls-python']) {
      expect(wrong.of(name).ok, name).toBe(false);
      expect(wrong.of(name).detail).toMatch(
        /did not verify the gateway's certificate for trajgate-doctor\.example\.org:443/,
      );
    }
    // Another CA of the same name: OpenSSL fails on the signature (35), else on the issuer (60).
    expect(wrong.of('tls-curl').detail).toMatch(/exit (35|60):/);
  });

  it('an allowlist that lets loopback through fails unlisted-refused', async () => {
    const g = await startPorted(
      example({
        network: {
          allow: ['127.0.0.1', '127.255.255.254', '[::1]'],
          allowPrivate: ['127.0.0.0/8', '::1/128'],
          ports: [80, 443],
        },
      }),
    );
    const r = await doctor(g);
    expect(r.status).toBe(1);
    expect(r.of('unlisted-refused')).toMatchObject({ ok: false });
    expect(r.of('unlisted-refused').detail).toMatch(/was not refused by trajgate: 502/);
    expect(r.of('unlisted-refused').detail).toMatch(
      /GET http:\/\/127\.0\.0\.1(:80)?\/trajgate-doctor/,
    );
    expect(r.of('admin-hidden').ok).toBe(true);
  });

  it('data in a workspace, a broken chain and a small fd limit each fail with why', async () => {
    const g = await startPorted(example({ limits: { maxConnections: 1_000_000 } }));
    // The workspace replaced by a link to the journal's folder after start.
    rmSync(g.workspace, { recursive: true });
    symlinkSync(dirname(g.journal), g.workspace);
    // Records to break: the doctor's own probes are journaled.
    expect((await doctor(g)).of('journal').ok).toBe(true);
    const lines = readFileSync(g.journal, 'utf8').split('\n');
    expect(lines.length).toBeGreaterThan(2);
    lines[0] = (lines[0] as string).replace('"type":', '"x":1,"type":');
    writeFileSync(g.journal, lines.join('\n'));
    const r = await doctor(g);
    expect(r.status).toBe(1);
    expect(r.of('data-paths').detail).toMatch(
      /journal.path: the journal's folder .* is inside the workspace/,
    );
    expect(r.of('journal').ok).toBe(false);
    expect(r.of('journal').detail).toMatch(/journal\.jsonl:2/);
    expect(r.of('fd-limit').detail).toMatch(
      /limits\.maxConnections 1000000 may need 2000064 open files/,
    );
  });

  it('a dead redis fails the store check', async () => {
    const redis = await startRedis();
    const g = await startPorted(example({ state: { store: 'redis', redis: { url: redis.url } } }));
    const up = await doctor(g);
    expect(up.of('store').detail).toBe(`redis at ${redis.url} answers PING`);
    expect(up.of('clock').detail).toMatch(/redis 0\.0 s off/);
    await redis.kill();
    const r = await doctor(g);
    expect(r.status).toBe(1);
    expect(r.of('store').ok).toBe(false);
    expect(r.of('store').detail).toMatch(/does not answer/);
  });
});
