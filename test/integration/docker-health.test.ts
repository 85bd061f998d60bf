import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AS_ROOT, CLI, unprivileged } from '../helpers/cli.js';
import { startChild, tempConfig, writeConfig } from '../helpers/child-gateway.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * What a container runtime relies on: `/healthz` answers without the token and says nothing
 * else, opens no other route; a CA the gateway's user cannot read stops `start` with a message
 * that names the file, its owner and that user, and the process exits.
 */
describe('GET /healthz', () => {
  it('answers ok without a token, and is no way around the token for anything else', async () => {
    const g = await startChild(tempConfig({}).config);
    const base = `http://127.0.0.1:${g.adminPort}`;
    const live = await fetch(`${base}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.text()).toBe('ok\n');
    expect(live.headers.get('cache-control')).toBe('no-store');
    const head = await fetch(`${base}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    for (const [method, path] of [
      ['GET', '/healthz/'],
      ['GET', '/healthz/../api/sessions'],
      ['GET', '/healthz%2F..%2Fapi%2Fsessions'],
      ['GET', '/api/health'],
      ['GET', '/metrics'],
      ['POST', '/healthz'],
      ['GET', '/api/healthz'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.text()).not.toMatch(/sessions|journal/);
    }
    await g.kill('SIGTERM');
  });
});

describe('a CA the gateway cannot read', () => {
  it('stops start with the path, the owner and the user it runs as, and exits', () => {
    const ca = makeLocalCa();
    const dir = tempDir();
    const workspace = tempDir('trajgate-ws-');
    const data = join(dir, 'data');
    mkdirSync(data);
    const asRoot = AS_ROOT;
    // Root reads every file: the gateway runs as nobody, as the image's node user would meet
    // a key made by the host's user. Without root, the key is closed to its owner instead.
    if (asRoot) {
      for (const d of [dir, workspace, join(ca.dir, '..')]) chmodSync(d, 0o755);
      chmodSync(ca.dir, 0o755);
      chownSync(data, 65534, 65534);
    } else chmodSync(join(ca.dir, 'ca-key.pem'), 0o000);
    const config = writeConfig(dir, {
      version: 1,
      workspace,
      journal: join(data, 'journal.jsonl'),
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
      tls: { intercept: ['localhost'], ca: ca.dir },
    });
    const run = spawnSync(...unprivileged([process.execPath, CLI, 'start', '--config', config]), {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.signal).toBeNull(); // exited by itself, not by the timeout
    expect(run.status).not.toBe(0);
    const key = join(ca.dir, 'ca-key.pem');
    expect(run.stderr).toContain(`EACCES: cannot read ${key} (tls.ca)`);
    expect(run.stderr).toMatch(asRoot ? /as user nobody \(uid 65534\)/ : /as user \S+ \(uid \d+\)/);
    expect(run.stderr).toMatch(asRoot ? /owned by uid 0 with mode 0600/ : /with mode 0000/);
    expect(run.stderr).toMatch(/chown \d+ /);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
});
