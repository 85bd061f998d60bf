import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXES, osError, osMessage, systemMessage } from '../../src/os-error.js';
import { tempDir } from '../helpers/tmp.js';

/** An error as Node's fs and net make them: a code, a syscall, a path or an address. */
function sysError(code: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${code}: something, op`), { code, ...extra });
}

/** What Node threw for `fn`, a real OS error. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
}

const uid = process.getuid?.() ?? -1;

describe('osMessage: every code a user can meet names the place, the operation and a fix', () => {
  const dir = tempDir();
  const file = join(dir, 'data', 'journal.jsonl');
  it.each([
    // [code, op, path, key, what the message must say]
    [
      'EACCES',
      'read',
      file,
      undefined,
      [`EACCES: cannot read ${file} as `, `chown ${uid} ${file}`],
    ],
    [
      'EACCES',
      'create',
      file,
      'journal.path',
      [
        `EACCES: cannot create ${file} (journal.path) as `,
        `(${dir} is owned by uid `,
        `let uid ${uid} write to ${dir}`,
        'or change journal.path',
      ],
    ],
    ['EPERM', 'write', dir, undefined, [`EPERM: cannot write ${dir} as `, `chown ${uid} ${dir}`]],
    [
      'EEXIST',
      'create',
      dir,
      '--dir',
      [
        `EEXIST: cannot create ${dir} (--dir): it already exists; remove or move it, or change --dir`,
      ],
    ],
    [
      'ENOENT',
      'read',
      file,
      undefined,
      [`ENOENT: cannot read ${file}: no such file or folder; check the path`],
    ],
    [
      'ENOTDIR',
      'create',
      file,
      undefined,
      ['a part of the path is a file, not a folder; move that file away'],
    ],
    ['EISDIR', 'read', dir, undefined, [`EISDIR: cannot read ${dir}: it is a folder; name a file`]],
    [
      'ENOSPC',
      'write',
      file,
      'journal.path',
      ['no space left on the device', `df -h ${dir}`, 'or change journal.path'],
    ],
    [
      'EDQUOT',
      'write',
      file,
      undefined,
      ["the user's disk quota is used up", `raise uid ${uid}'s quota`],
    ],
    ['EROFS', 'write', file, undefined, ['the filesystem is read-only; mount it read-write']],
    ['EMFILE', 'open', file, undefined, ['too many open files in this process', 'ulimit -n']],
    ['ENFILE', 'open', file, undefined, ['too many open files on this host', 'fs.file-max']],
    ['ELOOP', 'read', file, undefined, ['too many symbolic links (a loop); fix the links']],
    ['ENAMETOOLONG', 'create', file, undefined, ['the name is too long; choose a shorter path']],
    [
      'EADDRINUSE',
      'listen on',
      '127.0.0.1:8080',
      'listen.proxy',
      [
        'EADDRINUSE: cannot listen on 127.0.0.1:8080 (listen.proxy): address already in use',
        "`ss -ltnp 'sport = :8080'` names it",
        'or change listen.proxy',
      ],
    ],
    [
      'EADDRNOTAVAIL',
      'listen on',
      '[fd00::1]:8080',
      'listen.admin',
      ['no interface of this host has that address', 'ip -brief address', 'or change listen.admin'],
    ],
  ] as const)('%s on %s', (code, op, path, key, says) => {
    const message = osMessage(sysError(code), { op, path, ...(key ? { key } : {}) });
    for (const s of says) expect(message).toContain(s);
    expect(message).not.toContain('something, op'); // Node's own text is replaced, not repeated
  });

  it('a folder to create is made for the user, not its parent given away', () => {
    const folder = join(dir, 'data', 'certs');
    expect(osMessage(sysError('EACCES'), { op: 'create', path: folder, folder: true })).toMatch(
      new RegExp(
        `; create it for uid ${uid} \\(e\\.g\\. \`mkdir -p ${folder} && chown ${uid} ${folder}\`\\)$`,
      ),
    );
  });

  it('has a fix for each code it knows', () => {
    for (const code of Object.keys(FIXES)) {
      const message = osMessage(sysError(code), { op: 'write', path: '/nowhere/x' });
      expect(message, code).toMatch(new RegExp(`^${code}: cannot write /nowhere/x.*; \\S`));
    }
  });

  it('names the user it runs as and the owner and mode of a path that exists', () => {
    const secret = join(dir, 'secret');
    writeFileSync(secret, 'x', { mode: 0o640 });
    expect(osMessage(sysError('EACCES'), { op: 'read', path: secret })).toMatch(
      new RegExp(`as (user \\S+ \\(uid ${uid}\\)|uid ${uid}), owned by uid ${uid} with mode 0640;`),
    );
  });

  it('a place-specific fix wins; an unknown code keeps its own text, once', () => {
    const fixes = { EACCES: 'choose a port of 1024 or more' };
    expect(osMessage(sysError('EACCES'), { op: 'listen on', path: '0.0.0.0:80', fixes })).toMatch(
      /^EACCES: cannot listen on 0\.0\.0\.0:80 as .*; choose a port of 1024 or more$/,
    );
    expect(osMessage(sysError('EIO'), { op: 'read', path: '/x' })).toBe(
      'EIO: cannot read /x: something, op',
    );
    expect(osMessage(new Error('the file accepted no bytes'), { op: 'write', path: '/x' })).toBe(
      'cannot write /x: the file accepted no bytes',
    );
  });

  it('osError carries the trajgate code', () => {
    const err = osError('E_FILE_WRITE', sysError('EROFS'), { op: 'write', path: '/x.har' });
    expect(err.code).toBe('E_FILE_WRITE');
    expect(err.message).toMatch(/^EROFS: cannot write \/x\.har: /);
  });
});

describe('systemMessage: the place from the error itself', () => {
  it('real errors from fs: the syscall becomes the operation, the path is named', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), '');
    expect(systemMessage(thrown(() => readFileSync(join(dir, 'nope'))))).toBe(
      `ENOENT: cannot open ${dir}/nope: no such file or folder; check the path`,
    );
    expect(systemMessage(thrown(() => mkdirSync(join(dir, 'file'), { recursive: true })))).toMatch(
      new RegExp(`^EEXIST: cannot create ${dir}/file: it already exists; remove or move it`),
    );
    expect(
      systemMessage(thrown(() => mkdirSync(join(dir, 'file', 'x'), { recursive: true }))),
    ).toMatch(/^ENOTDIR: cannot create .*file\/x: a part of the path is a file, not a folder/);
  });

  it('a listen error names the address; what the error lacks comes from the caller', () => {
    const err = sysError('EADDRINUSE', { syscall: 'listen', address: '::', port: 8081 });
    expect(systemMessage(err, { key: 'listen.bridge' })).toMatch(
      /^EADDRINUSE: cannot listen on \[::\]:8081 \(listen\.bridge\): address already in use; .*sport = :8081/,
    );
    const byFd = sysError('ENOSPC', { syscall: 'write' });
    expect(systemMessage(byFd, { path: '/data/j.jsonl', key: 'journal.path' })).toMatch(
      /^ENOSPC: cannot write \/data\/j\.jsonl \(journal\.path\): no space left/,
    );
  });

  it('anything else keeps its message', () => {
    expect(systemMessage(new Error('plain'))).toBe('plain');
    expect(systemMessage(sysError('ENOSPC'))).toBe('ENOSPC: something, op');
  });
});
