import { describe, expect, it } from 'vitest';
import { isTrajgateError } from '../../src/errors.js';
import type { ToolMap } from '../../src/event/tool-map.js';
import { FILESYSTEM_TOOLS, toolMap, toolTargets } from '../../src/event/tool-map.js';

/** The events a call makes (targets without their setters). */
const toolEvents = (map: ToolMap, name: string, args: Record<string, unknown>) =>
  toolTargets(map, name, args)?.map(({ kind, target, tree }) =>
    tree ? { kind, target, tree } : { kind, target },
  ) ?? null;

/** toolTargets: which events a tool call makes, by the built-in map and config overrides. */
const builtin = toolMap({});

describe('built-in mapping (@modelcontextprotocol/server-filesystem)', () => {
  const writes = ['write_file', 'create_directory'];
  const reads = ['read_file', 'read_text_file', 'read_media_file', 'get_file_info'];
  // Their answer names (or greps) what is under the folder: a read of the whole tree.
  const trees = ['list_directory', 'list_directory_with_sizes', 'directory_tree', 'search_files'];
  it.each(writes)('%s → write at path', (name) => {
    expect(toolEvents(builtin, name, { path: '/w/a', content: 'x' })).toEqual([
      { kind: 'write', target: '/w/a' },
    ]);
  });
  it.each(reads)('%s → read at path', (name) => {
    expect(toolEvents(builtin, name, { path: '/w/a', pattern: '*.ts' })).toEqual([
      { kind: 'read', target: '/w/a' },
    ]);
  });
  it.each(trees)('%s → a tree read at path', (name) => {
    expect(toolEvents(builtin, name, { path: '/w/a', pattern: '*.ts' })).toEqual([
      { kind: 'read', target: '/w/a', tree: true },
    ]);
  });
  it('edit_file → read and write at path: its answer is a diff of the file, dryRun or not', () => {
    expect(toolEvents(builtin, 'edit_file', { path: '/w/a', edits: [], dryRun: true })).toEqual([
      { kind: 'read', target: '/w/a' },
      { kind: 'write', target: '/w/a' },
    ]);
  });
  it('move_file → read of its source, then write at source and at destination', () => {
    expect(toolEvents(builtin, 'move_file', { source: '/w/a', destination: '/o/b' })).toEqual([
      { kind: 'read', target: '/w/a' },
      { kind: 'write', target: '/w/a' },
      { kind: 'write', target: '/o/b' },
    ]);
  });
  it('read_multiple_files → one read per element of paths[]', () => {
    expect(toolEvents(builtin, 'read_multiple_files', { paths: ['/a', 'b', '/c'] })).toEqual([
      { kind: 'read', target: '/a' },
      { kind: 'read', target: 'b' },
      { kind: 'read', target: '/c' },
    ]);
    expect(toolEvents(builtin, 'read_multiple_files', { paths: [] })).toEqual([]);
  });
  it('list_allowed_directories makes no event; an unknown tool is null', () => {
    expect(toolEvents(builtin, 'list_allowed_directories', {})).toEqual([]);
    expect(toolEvents(builtin, 'format_disk', { path: '/' })).toBeNull();
  });
  // Names of Object.prototype members are not tools the map knows: unmapped, not inherited.
  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty'])(
    'a tool named %s is unmapped (null), not an inherited property',
    (name) => {
      expect(toolEvents(builtin, name, {})).toBeNull();
    },
  );
  it('the built-in table itself is not changed by toolMap', () => {
    toolMap({ write_file: { kind: 'read', target: 'path' } });
    expect(FILESYSTEM_TOOLS.write_file).toEqual([{ kind: 'write', target: 'path' }]);
  });
});

describe('configuration overrides and extends', () => {
  const map = toolMap({
    write_file: { kind: 'read', target: 'path' },
    run_command: { kind: 'command', target: 'cwd' },
    exec: { kind: 'command', target: 'options.cwd' },
    deploy: [
      { kind: 'deploy', target: 'env' },
      { kind: 'write', target: 'files[].path' },
    ],
    copy_all: { kind: 'write', target: 'pairs[].to[]' },
  });
  it('an entry replaces the built-in one', () => {
    expect(toolEvents(map, 'write_file', { path: '/x' })).toEqual([{ kind: 'read', target: '/x' }]);
  });
  it('built-in entries not named stay', () => {
    expect(toolEvents(map, 'create_directory', { path: '/x' })).toEqual([
      { kind: 'write', target: '/x' },
    ]);
  });
  it('a configured read may say tree: true (a grep-like tool)', () => {
    const grep = toolMap({ grep: { kind: 'read', target: 'dir', tree: true } });
    expect(toolEvents(grep, 'grep', { dir: '/w', regex: 'x' })).toEqual([
      { kind: 'read', target: '/w', tree: true },
    ]);
  });
  it('a command takes its target from cwd, also nested (options.cwd)', () => {
    expect(toolEvents(map, 'run_command', { cwd: '/w', command: 'ls' })).toEqual([
      { kind: 'command', target: '/w' },
    ]);
    expect(toolEvents(map, 'exec', { options: { cwd: '/w/sub' }, argv: ['ls'] })).toEqual([
      { kind: 'command', target: '/w/sub' },
    ]);
  });
  it('several events per call, in spec order; arrays of objects', () => {
    const files = [{ path: '/w/a' }, { path: '/o/b' }];
    expect(toolEvents(map, 'deploy', { env: 'prod', files })).toEqual([
      { kind: 'deploy', target: 'prod' },
      { kind: 'write', target: '/w/a' },
      { kind: 'write', target: '/o/b' },
    ]);
  });
  it('nested arrays (pairs[].to[])', () => {
    const pairs = [{ to: ['/a', '/b'] }, { to: ['/c'] }];
    expect((toolEvents(map, 'copy_all', { pairs }) ?? []).map((e) => e.target)).toEqual([
      '/a',
      '/b',
      '/c',
    ]);
  });
});

describe('command: the argument holding the command line a command tool runs', () => {
  const map = toolMap({
    shell: { kind: 'command', target: 'cwd', command: 'command' },
    exec: { kind: 'command', target: 'options.cwd', command: 'options.argv' },
  });
  const commands = (name: string, args: Record<string, unknown>) =>
    toolTargets(map, name, args)?.map(({ kind, target, command }) => ({ kind, target, command }));
  it('a string is the command line as given (redacted later, when normalised)', () => {
    expect(commands('shell', { cwd: '/w', command: 'npm test -- --token=x' })).toEqual([
      { kind: 'command', target: '/w', command: 'npm test -- --token=x' },
    ]);
  });
  it('an array of strings (an argv) is shown shell-quoted, so it reads back as the same words', () => {
    const argv = ['git', 'commit', '-m', "it's done", '', 'a;b', '$HOME'];
    expect(commands('exec', { options: { cwd: '/w', argv } })).toEqual([
      {
        kind: 'command',
        target: '/w',
        command: `git commit -m 'it'\\''s done' '' 'a;b' '$HOME'`,
      },
    ]);
  });
  it('left out (or empty), the event has no command line', () => {
    expect(commands('shell', { cwd: '/w' })).toEqual([{ kind: 'command', target: '/w' }]);
    expect(commands('shell', { cwd: '/w', command: '' })).toEqual([
      { kind: 'command', target: '/w' },
    ]);
  });
  it.each([
    [{ cwd: '/w', command: 5 }, /tool shell: argument "command" must be a command line/],
    [{ cwd: '/w', command: { run: 'ls' } }, /argument "command" must be a command line/],
    [{ cwd: '/w', command: ['ls', 1] }, /argument "command" must be a command line/],
    [{ cwd: '/w', command: [] }, /argument "command" must be a command line/],
  ])('anything else is an error naming the argument: %j', (args, says) => {
    expect(() => toolTargets(map, 'shell', args)).toThrow(says);
  });
});

describe('missing or non-string targets are errors naming the argument', () => {
  const map = toolMap({
    exec: { kind: 'command', target: 'options.cwd' },
    deploy: { kind: 'write', target: 'files[].path' },
  });
  it.each([
    ['write_file', {}, /tool write_file: argument "path" must be a non-empty string, got/],
    ['write_file', { path: 5 }, /argument "path" must be a non-empty string/],
    ['write_file', { path: '' }, /argument "path" must be a non-empty string/],
    ['write_file', { path: null }, /argument "path"/],
    ['write_file', { path: ['/a'] }, /argument "path"/],
    ['write_file', { path: { toString: '/a' } }, /argument "path"/],
    ['move_file', { source: '/w/a' }, /argument "destination"/],
    ['move_file', { source: 1, destination: '/b' }, /argument "source"/],
    ['read_multiple_files', {}, /argument "paths\[\]" must be an array/],
    ['read_multiple_files', { paths: '/etc/passwd' }, /argument "paths\[\]" must be an array/],
    [
      'read_multiple_files',
      { paths: ['/a', 7] },
      /argument "paths\[\]" must be a non-empty string/,
    ],
    ['exec', { cwd: '/w' }, /tool exec: argument "options.cwd"/],
    ['exec', { options: '/w' }, /argument "options.cwd"/],
    ['exec', { options: { cwd: 3 } }, /argument "options.cwd"/],
    ['deploy', { files: [{ path: '/a' }, {}] }, /argument "files\[\].path"/],
    ['deploy', { files: [null] }, /argument "files\[\].path"/],
  ])('%s %j', (name, args, says) => {
    let thrown: unknown;
    try {
      toolEvents(map, name, args as Record<string, unknown>);
    } catch (err) {
      thrown = err;
    }
    expect(isTrajgateError(thrown)).toBe(true);
    expect((thrown as { code: string }).code).toBe('E_EVENT_INVALID');
    expect((thrown as Error).message).toMatch(says);
  });
});

describe('set writes the judged value back where the target was', () => {
  const map = toolMap({
    exec: { kind: 'command', target: 'options.cwd' },
    copy_all: { kind: 'write', target: 'pairs[].to[]' },
    proto: { kind: 'write', target: '__proto__' },
  });
  it('top level, nested, and in arrays, leaving the rest as it was', () => {
    const args = { source: 'a', destination: 'b', extra: 1 };
    for (const t of toolTargets(map, 'move_file', args) ?? []) t.set(`/w/${t.target}`);
    expect(args).toEqual({ source: '/w/a', destination: '/w/b', extra: 1 });
    const exec = { options: { cwd: 'sub', env: {} } };
    for (const t of toolTargets(map, 'exec', exec) ?? []) t.set('/w/sub');
    expect(exec).toEqual({ options: { cwd: '/w/sub', env: {} } });
    const copy = { pairs: [{ to: ['x', 'y'] }, { to: ['z'] }] };
    for (const t of toolTargets(map, 'copy_all', copy) ?? []) t.set(t.target.toUpperCase());
    expect(copy).toEqual({ pairs: [{ to: ['X', 'Y'] }, { to: ['Z'] }] });
  });
  it('an own __proto__ argument (JSON.parse makes one) is replaced, not Object’s setter', () => {
    const args = JSON.parse('{"__proto__":"rel"}') as Record<string, unknown>;
    for (const t of toolTargets(map, 'proto', args) ?? []) t.set('/w/rel');
    expect(JSON.stringify(args)).toBe('{"__proto__":"/w/rel"}');
  });
});
