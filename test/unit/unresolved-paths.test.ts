import { spawnSync } from 'node:child_process';
import { chmodSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Event } from '../../src/event/event.js';
import { normalizeEvent } from '../../src/event/normalize.js';
import { pathReadings, physicalPath } from '../../src/event/paths.js';
import { compileTargets, matchesTargets } from '../../src/guard/policy.js';
import { unprivileged } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A path trajgate cannot resolve is refused, never judged by its raw text, and
 * a write to a regular file with other hard links is refused (its other names may be outside).
 */
const ws = tempDir();
const outside = tempDir();
symlinkSync('loop', join(ws, 'loop'));
symlinkSync(join(ws, 'b'), join(ws, 'a'));
symlinkSync(join(ws, 'a'), join(ws, 'b'));
writeFileSync(join(outside, 'target'), 'outside');
linkSync(join(outside, 'target'), join(ws, 'linked'));
writeFileSync(join(ws, 'single'), 'one name');
mkdirSync(join(ws, 'dir'));
mkdirSync(join(outside, 'sub'));
symlinkSync(join(outside, 'sub'), join(ws, 'out'));

const ctx = { session: 's', source: 'ingest' as const, ts: 0, workspace: ws };
const event = (kind: string, target: string): Event => normalizeEvent({ kind, target }, ctx);

describe('paths trajgate cannot resolve', () => {
  it.each([
    ['a link to itself', 'loop/x'],
    ['two links to each other', 'a/secret'],
    ['a name over 255 bytes', 'n'.repeat(300)],
    ['a whole path over PATH_MAX', `${'d/'.repeat(2100)}x`],
    ['a loop behind ..', 'dir/../loop/../x'],
  ])('%s resolves to null and is refused for every path kind', (_what, target) => {
    expect(pathReadings(target, ws).path).toBeNull();
    for (const kind of ['read', 'write', 'command']) {
      const e = event(kind, target);
      expect(e.denied).toMatch(/cannot be resolved/);
    }
  });

  it('no permission (EACCES, as an unprivileged user): null, not the raw text', () => {
    const closed = join(tempDir(), 'closed');
    mkdirSync(closed);
    writeFileSync(join(closed, 'secret'), 's');
    chmodSync(closed, 0o700);
    chmodSync(join(closed, '..'), 0o755);
    const paths = pathToFileURL(resolve('dist/event/paths.js')).href;
    const script = `import(${JSON.stringify(paths)}).then((m) => process.stdout.write(JSON.stringify(m.physicalPath(${JSON.stringify(join(closed, 'secret'))}, '/'))))`;
    // Root reads any folder: the check runs as nobody, as a gateway not running as root would.
    const run = spawnSync(...unprivileged([process.execPath, '-e', script]), { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('null');
  });

  it('rule targets match an unresolved path whatever its raw text says', () => {
    const targets = compileTargets(['/home/*/.ssh/**'], 'none');
    expect(matchesTargets(targets, event('read', 'loop/x'))).toBe(true);
    expect(matchesTargets(targets, event('read', 'single'))).toBe(false);
  });
});

describe('relative targets are joined as the OS joins them', () => {
  it('`link/..` follows the link before `..`: the physical reading is outside', () => {
    expect(pathReadings('out/../target', ws)).toMatchObject({
      path: join(outside, 'target'),
      alias: join(ws, 'target'),
    });
    expect(pathReadings('dir/../single', ws)).toEqual({ path: join(ws, 'single'), alias: null });
  });
});

describe('writes to a file with other hard links', () => {
  it('are refused, naming the links; reads of it and writes to one-name files are not', () => {
    expect(event('write', 'linked').denied).toBe(
      'the file has other hard links: its other names may be outside the workspace',
    );
    expect(event('read', 'linked').denied).toBeUndefined();
    expect(event('write', 'single').denied).toBeUndefined();
    expect(event('write', 'new-file').denied).toBeUndefined();
    expect(event('write', 'dir').denied).toBeUndefined();
    expect(physicalPath('linked', ws)).toBe(join(ws, 'linked'));
  });
});
