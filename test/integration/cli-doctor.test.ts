import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCliAsync } from '../helpers/cli.js';
import type { PortedGateway } from '../helpers/child-gateway.js';
import { startPorted } from '../helpers/child-gateway.js';
import { skewedClock } from '../helpers/clock-skew.js';
import { curl } from '../helpers/curl.js';
import { refusingPort, startTcpServer } from '../helpers/raw.js';
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

  it('admin-hidden: its own admin port is refused however it is spelled; a forward to it fails', async () => {
    let adminPort = 0;
    // A port forward to the admin listener (as a published container port is): not the
    // gateway's own port, so nothing but the allowlist keeps agents from the review API.
    const forward = await startTcpServer((socket) => {
      const admin = connect(adminPort, '127.0.0.1');
      admin.on('error', () => socket.destroy());
      socket.pipe(admin).pipe(socket);
    });
    // A config that tries to expose the admin listener: loopback private-allowed (but for
    // 127.255.255.254, the unlisted probe's), REVIEW forwarded, the forward allowed.
    const g = await startPorted(
      example({
        network: {
          allow: [`127.0.0.1:${forward.port}`],
          allowPrivate: ['127.0.0.0/9', '0.0.0.0/32', '::1/128', '::ffff:127.0.0.0/105'],
          ports: [80, 443],
        },
        policy: { ...(EXAMPLE.policy as object), review: 'pass' },
      }),
    );
    adminPort = g.adminPort;
    // And its port approved, which lets a CONNECT past network.ports.
    const approved = await runCliAsync([
      'approve',
      '--global',
      `127.0.0.1:${adminPort}`,
      '--config',
      g.config,
    ]);
    expect(approved.status, approved.stderr).toBe(0);
    // Each spelling from a source address of its own: a session each, none paused.
    const spellings = [
      ['127.0.0.1'],
      ['127.1.2.3'],
      ['localhost'],
      ['[::1]'],
      ['[::ffff:127.0.0.1]'],
      ['0.0.0.0'],
      ['2130706433'],
      ['127.0.0.1', '-p'],
    ];
    for (const [i, [host, ...how]] of spellings.entries()) {
      const r = await curl([
        ...how,
        '--interface',
        `127.0.9.${i + 1}`,
        '-x',
        g.gateway.proxyUrl,
        `http://${host}:${adminPort}/healthz`,
      ]);
      expect(how.length > 0 ? r.stderr : String(r.status), `${host} ${how}`).toContain('403');
    }
    const denied = readFileSync(g.journal, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"session":"127.0.9.'))
      .map((l) => (JSON.parse(l) as { denied?: string }).denied)
      .filter((d) => d !== undefined);
    expect(denied).toHaveLength(spellings.length);
    for (const d of denied) expect(d).toMatch(/^trajgate's own port \(.*:\d+\)$/);
    const hidden = await doctor(g);
    expect(hidden.status, hidden.stdout + hidden.stderr).toBe(0);
    expect(hidden.of('admin-hidden').detail).toBe(
      `GET http://127.0.0.1:${adminPort}/healthz refused (403 REVIEW; boundary=network)`,
    );
    // The operator reaches the admin API through the forward, as an agent can.
    const through = `127.0.0.1:${forward.port}`;
    const leaked = await doctor(
      g,
      operatorCopy(g, {
        listen: {
          proxy: `127.0.0.1:${g.proxyPort}`,
          bridge: `127.0.0.1:${g.bridgePort}`,
          admin: through,
        },
      }),
    );
    expect(leaked.status).toBe(1);
    expect(leaked.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(['admin-hidden']);
    expect(leaked.of('admin-hidden').detail).toMatch(
      new RegExp(
        `^the admin listener answered through the proxy at http://${through}/healthz: 200: .*; an agent can reach the review API: narrow network\\.allowPrivate and network\\.allow \\(`,
      ),
    );
  });

  it('a gateway clock 30 s ahead or behind fails the clock check', async () => {
    const [ahead, behind] = await Promise.all([
      startPorted(example(), skewedClock('+30s')),
      startPorted(example(), skewedClock('-30s')),
    ]);
    for (const g of [ahead, behind]) {
      const r = await doctor(g);
      expect(r.status, r.stdout + r.stderr).toBe(1);
      expect(r.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(['clock']);
      const detail = r.of('clock').detail;
      const off =
        /^the gateway (\d+\.\d) s off \(more than 2\.0 s\): approvals' TTLs and decision links expire early or late; sync the clocks \(NTP\)$/.exec(
          detail,
        );
      expect(off, detail).not.toBeNull();
      // 30 s, less the second a Date header rounds away and the time the doctor waited for it.
      expect(Number(off?.[1]), detail).toBeGreaterThan(20);
      expect(Number(off?.[1]), detail).toBeLessThanOrEqual(30);
    }
  });

  it('a journal the running gateway can no longer write fails the journal check', async () => {
    const g = await startPorted(example());
    // Its file-size limit (RLIMIT_FSIZE, `ulimit -f`) lowered to the journal's size: every
    // append fails (EFBIG), as on a full disk; root is held to it too, unlike to a chmod.
    const size = statSync(g.journal).size;
    execFileSync('prlimit', ['--pid', String(g.gateway.pid), `--fsize=${size}:${size}`]);
    const refused = await curl([
      '-x',
      g.gateway.proxyUrl,
      `http://127.0.0.1:${await refusingPort()}/trajgate-doctor-test`,
    ]);
    expect(refused.status, refused.body).toBe(503);
    const r = await doctor(g);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(['journal']);
    // Every request is refused meanwhile: the probes through the proxy would prove nothing.
    for (const name of ['unlisted-refused', 'admin-hidden', 'tls'])
      expect(r.of(name).detail, name).toBe(
        'skipped: the gateway refuses every request until it can write its journal (see journal)',
      );
    expect(r.of('journal').detail).toMatch(
      new RegExp(
        `^the gateway cannot write ${g.journal} since \\S+Z, so requests are refused until it can: EFBIG: .*; raise the file-size limit \\(\`ulimit -f\``,
      ),
    );
    expect(statSync(g.journal).size).toBe(size);
  });
});
