import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { ZodType } from 'zod';
import type { Config } from '../../src/config/load.js';
import { loadConfigFile, parseConfig } from '../../src/config/load.js';
import type { Shape } from '../../src/config/parts.js';
import { configSchema } from '../../src/config/schema.js';
import { startGateway } from '../../src/gateway.js';
import { initCa } from '../../src/tls/ca.js';
import { tempDir } from '../helpers/tmp.js';
import { TEST_CA_PATH } from '../helpers/upstream.js';

/**
 * Every key of config/trajgate.example.yaml (the file documents them all), changed in turn to
 * another valid value and reloaded into a running gateway, either takes effect (every part that
 * reads it runs on the new value, and so does the running config) or is listed in
 * `restartNeeded` (and keeps its running value). A key that does neither fails, by name; so does
 * a key of the schema this test does not change (a new key must be read by a part or reported).
 */
const EXAMPLE = join(import.meta.dirname, '../../config/trajgate.example.yaml');
const DELETE = Symbol('delete the key');

/** Keys the example leaves commented out or unset, with a value each, so every key is here. */
const UNSET = {
  agents: [
    {
      id: 'agent-1',
      token: 'agent-1-token-0123456789abcdef',
      allow: ['GET https://api.github.com/repos/example/'],
      roles: ['builder'],
    },
  ],
  roles: { builder: { allow: ['registry.npmjs.org', 'pypi.org', 'files.pythonhosted.org'] } },
  credentials: [
    {
      name: 'github',
      value: 'credential-value-0123456789',
      hosts: ['api.github.com'],
      scheme: 'Bearer',
    },
  ],
  state: {
    redis: {
      url: 'unix:///run/trajgate-test/redis.sock',
      prefix: 'tg:',
      replica: 'gw-1',
      timeout: '1s',
    },
  },
  admin: { token: 'admin-token-0123456789abcdef' },
  notify: {
    webhook: 'http://127.0.0.1:9/hook',
    secret: 'webhook-secret-0123456789abcdef',
    pageUrl: 'https://trajgate.internal/',
    linkKey: 'link-key-0123456789abcdef',
  },
  telemetry: { otlp: { endpoint: 'http://127.0.0.1:9/otlp', headers: { 'x-api-key': 'k' } } },
};

/** Values with no other valid one: a literal, or a built-in boundary's field at its default. */
const CONSTANT = [
  'version',
  'policy.boundaries.workspace.outside',
  'policy.boundaries.network.unless',
];

interface Candidate {
  /** Where to put it, when a leaf changes only with its siblings; the leaf itself otherwise. */
  readonly at?: readonly string[];
  readonly value: unknown;
}

/** Another valid value, where the generic ones (another number, duration, string…) are not. */
const OTHER: Record<string, readonly Candidate[]> = {
  'state.store': [{ value: 'redis' }],
  engine: [{ value: 'node' }, { value: 'lean' }],
  'policy.countBy': [{ value: 'target' }],
  'policy.review': [{ value: 'pass' }],
  'policy.pause': [{ value: 'block' }],
  'policy.boundaries.network.kinds': [{ value: ['network', 'deploy'] }],
  'policy.boundaries.network.reviewAt': [
    {
      at: ['policy', 'boundaries', 'network'],
      value: { kinds: ['network'], unless: 'approved', reviewAt: 2, pauseAt: 3 },
    },
  ],
  'policy.boundaries.deploy.kinds': [{ value: ['deploy', 'command'] }],
  'policy.boundaries.secrets.kinds': [{ value: ['read', 'write'] }],
  'network.allowPrivate': [{ value: ['10.0.0.0/8'] }],
  'admin.tokens': [{ value: [{ name: 'ops', token: 'ops-token-0123456789abcdef' }] }],
  'notify.headers': [{ value: { 'x-receiver': 'trajgate' } }],
  'telemetry.otlp.headers': [{ value: { 'x-api-key': 'another' } }],
  'bridge.protocol': [{ value: 'http' }],
  'bridge.unmapped': [{ value: 'allow' }],
  'bridge.tools.run_command.kind': [
    { at: ['bridge', 'tools', 'run_command'], value: { kind: 'write', target: 'cwd' } },
  ],
  'bridge.tools.grep.kind': [
    { at: ['bridge', 'tools', 'grep'], value: { kind: 'write', target: 'path' } },
  ],
  'tls.intercept': [{ value: ['example.org'] }],
  'tls.upstreamCa': [{ value: [TEST_CA_PATH] }],
};

type Tree = Record<string, unknown>;
const isTree = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v);

function merged(base: Tree, over: Tree): Tree {
  const out = { ...base };
  for (const [k, v] of Object.entries(over))
    out[k] = isTree(v) && isTree(out[k]) ? merged(out[k] as Tree, v) : v;
  return out;
}

/** Every leaf's path: a scalar, an array (changed whole) or an empty mapping. */
function leaves(value: unknown, path: string[] = []): string[][] {
  if (!isTree(value) || Object.keys(value).length === 0) return [path];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
}

const get = (value: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>((v, k) => (isTree(v) ? v[k] : undefined), value);

/** `tree` with `value` at `path` (DELETE: without the key). */
function setting(tree: Tree, path: readonly string[], value: unknown): Tree {
  const [key, ...rest] = path as [string, ...string[]];
  const out = { ...tree };
  if (rest.length > 0) out[key] = setting((tree[key] as Tree) ?? {}, rest, value);
  else if (value === DELETE) delete out[key];
  else out[key] = value;
  return out;
}

/** Values to try for a leaf with no entry in OTHER. */
function generic(value: unknown): unknown[] {
  if (typeof value === 'boolean') return [!value];
  if (typeof value === 'number') return [value + 1, value * 2, value - 1, DELETE];
  if (typeof value === 'string') {
    const unit = /^(\d+)([A-Za-z]+)$/.exec(value);
    return [...(unit ? [`${Number(unit[1]) + 1}${unit[2]}`] : []), `${value}2`, DELETE];
  }
  if (Array.isArray(value)) return [value.length > 1 ? value.slice(0, -1) : [], DELETE];
  return [DELETE];
}

/** A schema without its optional, default and pipe wrappers (a pipe into an object: that). */
function unwrapped(schema: ZodType): any {
  let s = schema as any;
  for (;;) {
    const def = s._zod.def;
    if (['optional', 'default', 'prefault', 'nullable', 'readonly'].includes(def.type)) {
      s = def.innerType;
    } else if (def.type === 'pipe') {
      const into = unwrapped(def.in);
      if (into._zod.def.type === 'object') return into;
      s = def.out;
    } else return s;
  }
}

/** The keys of the schema, down to arrays, records and scalars. */
function schemaKeys(schema: ZodType, path: string[] = []): string[][] {
  const def = unwrapped(schema)._zod.def;
  if (def.type !== 'object') return [path];
  return Object.entries(def.shape as Record<string, ZodType>).flatMap(([k, v]) =>
    schemaKeys(v, [...path, k]),
  );
}

/** Whether a part reading `reads` reads the key at `path`. */
function reads(shape: Shape, path: readonly string[]): boolean {
  const fields = (shape as Record<string, true | readonly string[]>)[path[0] as string];
  return fields === true || (fields !== undefined && fields.includes(path[1] as string));
}

// The example's layout: config/ (its data and CA beside it) and workspace/ side by side.
const root = tempDir();
const dir = join(root, 'config');
for (const d of [dir, join(root, 'workspace'), join(root, 'workspace2')]) mkdirSync(d);
initCa(join(dir, 'certs'));
const file = join(dir, 'trajgate.yaml');
const listen = {
  proxy: '127.0.0.1:0',
  bridge: '127.0.0.1:0',
  admin: '127.0.0.1:0',
  socks: '127.0.0.1:0',
};
const base = merged(merged(parse(readFileSync(EXAMPLE, 'utf8')) as Tree, UNSET), { listen });
const load = (tree: Tree): Config => parseConfig(stringify(tree), file, dir);
const initial = load(base);

writeFileSync(file, stringify(base));
const gw = await startGateway(loadConfigFile(file), { log: pino({ level: 'silent' }) });
afterAll(() => gw.stop());

/** The first candidate that validates and changes the loaded config at `path`. */
function changed(path: string[]): { tree: Tree; loaded: Config } | null {
  const key = path.join('.');
  const tries: Candidate[] = [
    ...(OTHER[key] ?? []),
    ...generic(get(base, path)).map((value) => ({ value })),
  ];
  for (const c of tries) {
    const tree = setting(base, c.at ?? path, c.value);
    let loaded: Config;
    try {
      loaded = load(tree);
    } catch {
      continue;
    }
    if (!isDeepStrictEqual(get(loaded, path), get(initial, path))) return { tree, loaded };
  }
  return null;
}

describe('a reload of every key of the example config', () => {
  it('holds every key of the schema', () => {
    const held = leaves(base).map((p) => p.join('.'));
    const missing = schemaKeys(configSchema as unknown as ZodType)
      .map((p) => p.join('.'))
      .filter((key) => !held.some((h) => h === key || h.startsWith(`${key}.`)));
    expect(missing, 'keys in neither the example nor UNSET').toEqual([]);
  });

  it('has no other valid value for the constant keys', () => {
    for (const key of CONSTANT) expect(changed(key.split('.')), key).toBeNull();
  });

  it('applies each key or lists it as needing a restart', async () => {
    const failures: string[] = [];
    const restart: string[] = [];
    const keys = leaves(base).filter((p) => !CONSTANT.includes(p.join('.')));
    expect(keys.length).toBeGreaterThan(80);
    for (const path of keys) {
      const key = path.join('.');
      const change = changed(path);
      if (change === null) {
        failures.push(`${key}: no other valid value found (add one to OTHER)`);
        continue;
      }
      writeFileSync(file, stringify(change.tree));
      const result = await gw.reload('test').catch((err: Error) => err);
      if (result instanceof Error) {
        failures.push(`${key}: reload refused: ${result.message}`);
        continue;
      }
      const now = get(change.loaded, path);
      if (result.restartNeeded.some((k) => key === k || key.startsWith(`${k}.`))) {
        restart.push(key);
        if (!isDeepStrictEqual(get(gw.config, path), get(initial, path)))
          failures.push(`${key}: listed as needing a restart, but the running config took it`);
      } else {
        const readers = gw.parts.list().filter((p) => reads(p.reads, path));
        if (readers.length === 0) failures.push(`${key}: no part reads it, no restart is reported`);
        for (const p of readers)
          if (!isDeepStrictEqual(get(p.slice, path), now))
            failures.push(`${key}: ${p.name} still runs on ${JSON.stringify(get(p.slice, path))}`);
        if (!isDeepStrictEqual(get(gw.config, path), now))
          failures.push(`${key}: the running config did not take it`);
      }
      writeFileSync(file, stringify(base));
      const back = await gw.reload('test');
      expect(back.restartNeeded, `${key} back`).toEqual([]);
      expect(isDeepStrictEqual(gw.config, initial), `${key} back`).toBe(true);
    }
    expect(failures).toEqual([]);
    // The bugs this test was written for: a changed `state:` was ignored without a word.
    expect(restart).toEqual(
      expect.arrayContaining(['state.store', 'listen.proxy', 'journal.path']),
    );
  });
});
