import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pathReadings } from '../../src/event/paths.js';
import { toolMap, toolTargets } from '../../src/event/tool-map.js';
import { rootsInside } from '../../src/ingress/roots.js';
import { SessionOrder } from '../../src/ingress/session-order.js';
import { parseStrictJson } from '../../src/http/strict-json.js';
import { judgedPaths } from '../../src/ingress/tool-paths.js';
import { layout, tempDir } from '../helpers/tmp.js';

/** The pieces that make the bridge forward what it judged: JSON, paths, roots, call order. */
const refusedJson = (text: string) => {
  try {
    parseStrictJson(text);
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error(`accepted ${text}`);
};

describe('parseStrictJson', () => {
  it.each([
    [
      'a key twice at the top',
      '{"method":"tools/list","method":"tools/call"}',
      /"method" appears twice/,
    ],
    ['a key twice in arguments', '{"a":{"arguments":{"path":"/w/x","path":"/etc/x"}}}', /"path"/],
    ['the same key spelled with an escape', '{"path":1,"p\\u0061th":2}', /"path" appears twice/],
    ['in an object inside an array', '[{"x":1},{"y":1,"y":2}]', /"y"/],
    ['a number past a double', '{"id":1e400}', /too large/],
    ['a negative one', '[-1e309]', /too large/],
    ['nesting past 64', `${'['.repeat(65)}${']'.repeat(65)}`, /deeper than 64/],
    ['not JSON', '{"a":', /not valid JSON/],
  ])('%s → E_EVENT_INVALID', (_name, text, says) => {
    const err = refusedJson(text);
    expect(err.code).toBe('E_EVENT_INVALID');
    expect(err.message).toMatch(says);
  });

  it.each([
    ['equal keys in sibling objects', '{"a":{"x":1},"b":{"x":2}}'],
    ['keys that only look alike', '{"path":1,"Path":2,"path ":3}'],
    ['a string value containing key-like text', '{"a":"\\"a\\":1,","b":"\\\\","c":"}{"}'],
    ['numbers', '[0,-0.5,1e308,12345678901234567890,2E-5]'],
    ['nesting to 64', `${'['.repeat(64)}${']'.repeat(64)}`],
  ])('%s → accepted as JSON.parse reads it', (_name, text) => {
    expect(parseStrictJson(text)).toEqual(JSON.parse(text));
  });
});

describe('judgedPaths: tool paths as judged and forwarded', () => {
  const ws = tempDir();
  const outside = tempDir();
  layout(ws, ['sub', 'café'], { 'sub/out': outside, 'caf\u00e9-link': outside });
  mkdirSync(join(ws, '\u00c5'));
  mkdirSync(join(ws, 'A\u030a'));
  const tools = toolMap({
    run: { kind: 'command', target: 'cwd' },
    go: { kind: 'deploy', target: 'env' },
  });
  const judge = (name: string, args: Record<string, unknown>) => {
    const events = judgedPaths(toolTargets(tools, name, args) ?? [], ws);
    return { events, args };
  };

  it('relative and absolute paths are forwarded absolute; every path argument', () => {
    const { args } = judge('move_file', { source: 'a.txt', destination: `${ws}/sub/../b.txt` });
    expect(args).toEqual({ source: join(ws, 'a.txt'), destination: join(ws, 'b.txt') });
    const many = judge('read_multiple_files', { paths: ['x', 'sub/out/y', '/etc/hosts'] }).args;
    expect(many.paths).toEqual([join(ws, 'x'), join(outside, 'y'), '/etc/hosts']);
  });

  it('events keep the agent’s spelling as target and carry the readings judged', () => {
    const { events } = judge('write_file', { path: 'sub/out/z', content: '' });
    expect(events).toEqual([
      { kind: 'write', target: 'sub/out/z', readings: { path: join(outside, 'z'), alias: null } },
    ]);
  });

  it('a missing NFD component is the NFC entry beside it, through its link', () => {
    const nfd = 'cafe\u0301-link/x.txt';
    expect(judge('write_file', { path: nfd }).args.path).toBe(join(outside, 'x.txt'));
    expect(pathReadings(nfd, ws).path).toBe(join(ws, nfd)); // the OS reading (ingest, replay)
  });

  it('two Unicode-equal entries are ambiguous: E_PATH_REFUSED', () => {
    // U+212B ANGSTROM SIGN is, under NFC, both entries: U+00C5 and A + U+030A.
    let thrown: { code?: string; message?: string } = {};
    try {
      judge('write_file', { path: '\u212b/x' });
    } catch (err) {
      thrown = err as typeof thrown;
    }
    expect(thrown.code).toBe('E_PATH_REFUSED');
    expect(thrown.message).toMatch(/2 entries .* are the same name in Unicode/);
    // An exact name is never ambiguous.
    expect(judge('write_file', { path: '\u00c5/x' }).args.path).toBe(join(ws, '\u00c5/x'));
  });

  it.each([
    ['~/x', /starts with ~/],
    ['~', /starts with ~/],
    ['~root/x', /starts with ~/],
    ['file:///etc/x', /file: URI/],
    ['FILE:/etc/x', /file: URI/],
    ['a\0b', /NUL/],
    ['bad\ud800', /not valid Unicode/],
  ])('%j is refused (E_PATH_REFUSED)', (path, says) => {
    let thrown: { code?: string; message?: string } = {};
    try {
      judge('write_file', { path });
    } catch (err) {
      thrown = err as typeof thrown;
    }
    expect(thrown.code).toBe('E_PATH_REFUSED');
    expect(thrown.message).toMatch(says);
  });

  it('arguments mapped to other kinds stay as sent', () => {
    const { events, args } = judge('go', { env: '~/prod' });
    expect(events).toEqual([{ kind: 'deploy', target: '~/prod' }]);
    expect(args).toEqual({ env: '~/prod' });
    expect(judge('run', { cwd: '.' }).args).toEqual({ cwd: ws });
  });
});

describe('rootsInside', () => {
  const ws = tempDir();
  layout(ws, ['a'], { up: '..' });
  const roots = [
    { uri: `file://${ws}/a`, name: 'a' },
    { uri: `file://localhost${ws}` },
    { uri: 'file:///' },
    { uri: `file://${ws}/up` },
    { uri: `file://${ws}/a/../..` },
    { uri: `${ws}/a` },
    { uri: '~/' },
    { uri: 'file://host/x' },
    { uri: `file://${ws}%2Fa` },
    'file:///',
    { name: 'no uri' },
  ];
  it('keeps file: roots inside the workspace (as the file: URI of their path), removes the rest', () => {
    const { kept, removed } = rootsInside(roots, ws);
    expect(kept).toEqual([{ uri: `file://${ws}/a`, name: 'a' }, { uri: `file://${ws}` }]);
    expect(removed).toEqual([
      'file:///',
      `file://${ws}/up`,
      `file://${ws}/a/../..`,
      `${ws}/a`,
      '~/',
      'file://host/x',
      `file://${ws}%2Fa`,
      '"file:///"',
      '{"name":"no uri"}',
    ]);
  });
});

describe('SessionOrder', () => {
  const started: string[] = [];
  const enter = (order: SessionOrder, session: string, name: string, alone: boolean) =>
    order.enter(session, alone).then((leave) => {
      started.push(name);
      return leave;
    });
  const tick = () => new Promise((r) => setImmediate(r));

  it('reads run together; a change waits for them and runs alone; later reads wait for it', async () => {
    started.length = 0;
    const order = new SessionOrder();
    const r1 = enter(order, 's', 'r1', false);
    const r2 = enter(order, 's', 'r2', false);
    const w1 = enter(order, 's', 'w1', true);
    const r3 = enter(order, 's', 'r3', false);
    const other = enter(order, 't', 'other', true);
    await tick();
    expect(started).toEqual(['r1', 'r2', 'other']);
    (await r1)();
    await tick();
    expect(started).toEqual(['r1', 'r2', 'other']);
    const leave2 = await r2;
    leave2();
    leave2(); // twice is once
    await tick();
    expect(started).toEqual(['r1', 'r2', 'other', 'w1']);
    (await w1)();
    await tick();
    expect(started).toEqual(['r1', 'r2', 'other', 'w1', 'r3']);
    (await r3)();
    (await other)();
  });

  it('changes of one session run one after another', async () => {
    started.length = 0;
    const order = new SessionOrder();
    const calls = [1, 2, 3].map((n) => enter(order, 's', `w${n}`, true));
    for (const [i, call] of calls.entries()) {
      await tick();
      expect(started).toEqual([1, 2, 3].slice(0, i + 1).map((n) => `w${n}`));
      (await call)();
    }
  });
});
