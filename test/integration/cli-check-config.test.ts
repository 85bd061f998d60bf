import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeConfig } from '../helpers/child-gateway.js';
import {
  AS_ROOT,
  NOBODY,
  refusedByBoth,
  runCli,
  runCliAsync,
  runCliUnprivileged,
} from '../helpers/cli.js';
import { makeLocalCa } from '../helpers/tls.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `check-config` finds at once, sorted by line, everything that would stop `start`, as the user
 * running it: errors of every kind, listeners on one port, data paths it cannot write, a CA it
 * cannot read; `start` says the same and touches nothing. Root may do anything: these checks
 * run as nobody (uid 65534) then, and close the files to this user otherwise.
 */
const broken = join(import.meta.dirname, '../fixtures/config/broken');

/** How the user the check runs as is named: nobody when root, this user otherwise. */
const user = AS_ROOT
  ? `user nobody (uid ${NOBODY})`
  : `user ${userInfo().username} (uid ${process.getuid?.()})`;
const uid = AS_ROOT ? NOBODY : (process.getuid?.() as number);

/** A folder others may look into (mkdtemp makes 0700 ones): nobody must reach the files. */
function openDir(prefix?: string): string {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  return dir;
}

describe('errors of every kind at once', () => {
  it('are listed sorted by line, each with its key; start says the same and creates nothing', () => {
    const file = join(broken, 'many-kinds.yaml');
    refusedByBoth(file, [
      `trajgate: ${file}: 9 error(s)`,
      `  ${file}:12:1: workspace: ${broken}/ws-missing does not exist (create it, or change workspace)`,
      `  ${file}:14:3: policy.countBy: expected boundary | target, got "destination"`,
      `  ${file}:16:30: policy.sequences[0] (late).after.crossing: no boundary "deploy" (boundaries: workspace, network, tool)`,
      `  ${file}:19:3: listen.admin: Map keys must be unique`,
      `  ${file}:21:3: listen.bridge: 0.0.0.0:18480 overlaps listen.proxy (127.0.0.1:18480, ${file}:20): both would listen on port 18480, and start would fail (EADDRINUSE); give each listener its own port`,
      `  ${file}:23:15: agents[0].token: environment variable TRAJGATE_TEST_UNSET_TOKEN is not set`,
      `  ${file}:23:62: agents[0].roles[0]: no role "biulder" (roles: builder)`,
      `  ${file}:23:72: agents[0].workspace: ${broken}/nowhere does not exist (create it, or change agents[0].workspace)`,
      `  ${file}:27:1: netwrok: unknown key`,
    ]);
    expect(existsSync(join(broken, 'data'))).toBe(false);
  });

  it('a YAML syntax error stops the rest, and says so', () => {
    const r = runCli(['check-config', join(broken, 'not-yaml.yaml')]);
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe(
      `trajgate: ${join(broken, 'not-yaml.yaml')}: not valid YAML (other errors are looked for once it parses)`,
    );
  });
});

describe('a port in use', () => {
  it('stops start naming the key and the address; the command it names finds the other process', async () => {
    const other = createServer();
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const port = (other.address() as AddressInfo).port;
    const dir = tempDir();
    const config = writeConfig(dir, {
      version: 1,
      workspace: tempDir('trajgate-ws-'),
      journal: join(dir, 'data', 'journal.jsonl'),
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: `127.0.0.1:${port}` },
    });
    const r = await runCliAsync(['start', '--config', config]);
    expect(r.status).toBe(1);
    const find = `ss -ltnp 'sport = :${port}'`;
    expect(r.stderr).toBe(
      `trajgate: EADDRINUSE: cannot listen on 127.0.0.1:${port} (listen.admin): address already in use; another process listens there (\`${find}\` names it): stop it, or change listen.admin\n`,
    );
    // The command it names finds the one that listens: this test process.
    const ss = spawnSync('sh', ['-c', find], { encoding: 'utf8' });
    other.close();
    expect(ss.stdout).toContain(`127.0.0.1:${port}`);
    expect(ss.stdout).toContain(`pid=${process.pid},`);
  });
});

describe('data paths the gateway user cannot write', () => {
  it('are named with the operation, the user and a fix that works', () => {
    const dir = openDir();
    const parent = join(dir, 'owned-by-another');
    mkdirSync(parent, { mode: 0o755 });
    if (!AS_ROOT) chmodSync(parent, 0o555);
    const journal = join(parent, 'data', 'journal.jsonl');
    const config = writeConfig(dir, {
      version: 1,
      workspace: openDir('trajgate-ws-'),
      journal,
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    });
    const owner = AS_ROOT ? 0 : uid;
    const mode = AS_ROOT ? '0755' : '0555';
    const data = dirname(journal);
    const fix = `mkdir -p ${data} && chown ${uid} ${data}`;
    refusedByBoth(
      config,
      [
        `trajgate: ${config}: cannot use trajgate's files as ${user}`,
        `  ${config}:3:1: journal.path: EACCES: cannot create the journal's folder ${data} (journal.path) as ${user} (${parent} is owned by uid ${owner} with mode ${mode}); create it for uid ${uid} (e.g. \`${fix}\`), or change journal.path`,
      ],
      runCliUnprivileged,
    );
    expect(existsSync(data)).toBe(false);
    // The fix it names is enough: run as root, as an operator would (without root, the test
    // opens the folder it closed instead).
    if (AS_ROOT) expect(spawnSync('sh', ['-c', fix]).status).toBe(0);
    else chmodSync(parent, 0o755);
    const fixed = runCliUnprivileged(['check-config', config]);
    expect(fixed.stderr).toBe('');
    expect(fixed.stdout.split('\n')[0]).toBe('ok');
  });

  it('an existing journal, admin token or captures folder it cannot write or read is named', () => {
    const dir = openDir();
    const data = join(dir, 'data');
    mkdirSync(join(data, 'captures'), { recursive: true, mode: 0o755 });
    const journal = join(data, 'journal.jsonl');
    writeFileSync(journal, '', { mode: 0o644 });
    writeFileSync(join(data, 'admin-token'), 'x'.repeat(32), { mode: 0o600 });
    if (AS_ROOT) chownSync(data, NOBODY, -1);
    else for (const f of [journal, join(data, 'admin-token')]) chmodSync(f, 0o000);
    if (!AS_ROOT) chmodSync(join(data, 'captures'), 0o555);
    const config = writeConfig(dir, {
      version: 1,
      workspace: openDir('trajgate-ws-'),
      journal,
      capture: { bodies: true },
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    });
    const r = runCliUnprivileged(['check-config', config]);
    expect(r.status).toBe(1);
    const lines = r.stderr.split('\n');
    expect(lines[0]).toBe(`trajgate: ${config}: cannot use trajgate's files as ${user}`);
    expect(lines.slice(1, -1)).toEqual([
      expect.stringContaining(
        `journal.path: EACCES: cannot write the journal ${journal} (journal.path) as ${user}, owned by uid`,
      ),
      expect.stringContaining(
        `journal.path: EACCES: cannot read the admin token ${data}/admin-token (journal.path) as ${user}, owned by uid`,
      ),
      expect.stringContaining(
        `journal.path: EACCES: cannot write the captures' folder ${data}/captures (journal.path) as ${user}, owned by uid`,
      ),
    ]);
    expect(r.stderr).toContain(
      `make it readable by uid ${uid} (e.g. \`chown ${uid} ${data}/admin-token\``,
    );
  });
});

describe('a CA the gateway user cannot read', () => {
  it('is named with its owner, mode, the user and the fix; check-config passes once it is applied', () => {
    const ca = makeLocalCa();
    const key = join(ca.dir, 'ca-key.pem');
    chmodSync(dirname(ca.dir), 0o755);
    chmodSync(ca.dir, 0o755);
    if (!AS_ROOT) chmodSync(key, 0o000);
    const dir = openDir();
    mkdirSync(join(dir, 'data'));
    if (AS_ROOT) chownSync(join(dir, 'data'), uid, -1);
    const config = writeConfig(dir, {
      version: 1,
      workspace: openDir('trajgate-ws-'),
      journal: join(dir, 'data', 'journal.jsonl'),
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
      tls: { intercept: ['localhost'], ca: ca.dir },
    });
    const r = runCliUnprivileged(['check-config', config]);
    expect(r.status).toBe(1);
    const mode = AS_ROOT ? '0600' : '0000';
    expect(r.stderr).toBe(
      [
        `trajgate: ${config}: 1 error(s)`,
        `  ${config}:11:3: tls.ca: EACCES: cannot read ${key} (tls.ca) as ${user}, owned by uid ${AS_ROOT ? 0 : uid} with mode ${mode}; make it readable by uid ${uid} (e.g. \`chown ${uid} ${key}\`, keeping mode 0600 for the key) or let trajgate make its own CA (\`trajgate ca init --dir DIR\` as that user)`,
        '',
      ].join('\n'),
    );
    if (AS_ROOT) chownSync(key, uid, -1);
    else chmodSync(key, 0o600);
    expect(runCliUnprivileged(['check-config', config]).status).toBe(0);
  });

  it('a CA that is not there says how to make one', () => {
    const dir = openDir();
    const certs = join(dir, 'certs');
    const config = writeConfig(dir, {
      version: 1,
      workspace: openDir('trajgate-ws-'),
      journal: join(dir, 'data', 'journal.jsonl'),
      tls: { intercept: ['localhost'], ca: certs },
    });
    const r = runCli(['check-config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `tls.ca: no CA in ${certs}: run \`trajgate ca init --dir ${certs}\``,
    );
  });
});

describe('ca init', () => {
  it('onto a file or below one: the code, the path and what to do', () => {
    const dir = tempDir();
    const file = join(dir, 'file');
    writeFileSync(file, '');
    const onto = runCli(['ca', 'init', '--dir', file]);
    expect(onto.status).toBe(1);
    expect(onto.stderr).toBe(
      `trajgate: EEXIST: cannot create the CA's folder ${file} (--dir): it already exists; remove or move it, or change --dir\n`,
    );
    const below = runCli(['ca', 'init', '--dir', join(file, 'certs')]);
    expect(below.stderr).toBe(
      `trajgate: ENOTDIR: cannot create the CA's folder ${file}/certs (--dir): a part of the path is a file, not a folder; move that file away, or change --dir\n`,
    );
  });

  it('into a folder that holds a CA: --force, and the CA is kept', () => {
    const ca = makeLocalCa();
    const key = readFileSync(join(ca.dir, 'ca-key.pem'), 'utf8');
    const again = runCli(['ca', 'init', '--dir', ca.dir]);
    expect(again.status).toBe(2);
    expect(readFileSync(join(ca.dir, 'ca-key.pem'), 'utf8')).toBe(key);
    expect(again.stderr).toBe(
      `trajgate: EEXIST: cannot create a CA in ${ca.dir}: it already holds one (ca.pem, ca-key.pem); use --force to replace it\n`,
    );
  });
});
