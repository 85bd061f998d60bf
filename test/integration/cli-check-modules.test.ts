import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { refusingPort } from '../helpers/raw.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A hook runs `trajgate check` twice per tool call, so check loads only what it needs: the
 * installed program (bin/trajgate.cjs) run with a preload that lists, at exit, every CommonJS
 * file it required, the built-in modules it loaded and whether Node's ES module loader started;
 * with --config, a module loader hook lists the ES modules too. No package from node_modules
 * (undici, yaml, zod), no ES build, no config loader, no gateway code; the config (YAML and
 * schema) only when --config names one.
 */
const dir = tempDir();
const preload = join(dir, 'trace.cjs');
writeFileSync(
  preload,
  "const { appendFileSync } = require('node:fs');\n" +
    "process.on('exit', () => appendFileSync(process.env.TRACE_FILE, [\n" +
    "  ...Object.keys(require.cache).map((f) => require('node:url').pathToFileURL(f).href),\n" +
    "  ...process.moduleLoadList.filter((m) => m.startsWith('NativeModule '))\n" +
    "    .map((m) => 'node:' + m.slice('NativeModule '.length)),\n" +
    "].join('\\n') + '\\n'));\n",
);
writeFileSync(
  join(dir, 'hooks.mjs'),
  "import { appendFileSync } from 'node:fs';\n" +
    'export async function load(url, context, next) {\n' +
    "  appendFileSync(process.env.TRACE_FILE, url + '\\n');\n" +
    '  return next(url, context);\n' +
    '}\n',
);
const register = join(dir, 'register.mjs');
writeFileSync(
  register,
  "import { register } from 'node:module';\n" +
    "register(new URL('./hooks.mjs', import.meta.url));\n",
);
const READ = ['--kind', 'read', '--target', '/w/a'];
const ESM_LOADER = 'node:internal/modules/esm/loader';
let bridge: string;
beforeAll(async () => {
  bridge = `http://127.0.0.1:${await refusingPort()}`;
});

/**
 * The modules `trajgate ARGS` loads, relative to the repository (built-ins as node:NAME);
 * `esm` also lists the ES modules (its hook starts the ES loader itself).
 */
function loaded(args: string[], input = '', esm = false) {
  const trace = join(dir, `trace-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(trace, '');
  const flags = ['--require', preload, ...(esm ? ['--import', pathToFileURL(register).href] : [])];
  const r = spawnSync(process.execPath, [...flags, CLI, ...args], {
    input,
    env: { ...process.env, TRACE_FILE: trace, TRAJGATE_AGENT_TOKEN: 'x'.repeat(20) },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const root = pathToFileURL(join(import.meta.dirname, '../..')).href + '/';
  const modules = readFileSync(trace, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((url) => url.replace(root, ''));
  const own = [...new Set(modules.filter((m) => m.startsWith('dist/') || m.startsWith('bin/')))];
  return { status: r.status, stderr: r.stderr, modules, own };
}

describe('trajgate check loads only what it needs', () => {
  it('--kind/--target: the CommonJS build of check and node:http, no ES module loader', () => {
    const { status, stderr, modules, own } = loaded(['check', ...READ, '--bridge', bridge]);
    expect(status).toBe(2); // the bridge refuses connections: refused, as it must be
    expect(stderr).toMatch(/cannot reach the gateway/);
    expect(modules).not.toContain(ESM_LOADER);
    expect(modules.filter((m) => m.includes('node_modules'))).toEqual([]);
    expect(modules).toContain('node:http');
    expect(modules).not.toContain('node:https');
    expect(own.filter((m) => !m.startsWith('dist/hook/'))).toEqual(['bin/trajgate.cjs']);
    expect(own).not.toContain('dist/hook/config/load.js');
    expect(own.length).toBeLessThanOrEqual(10);
  });

  it('--hook claude-code: the same, with the tool mapping', () => {
    const input = JSON.stringify({
      hook_event_name: 'PreToolUse',
      cwd: '/w',
      tool_name: 'Read',
      tool_input: { file_path: '/w/a' },
    });
    const { modules, own } = loaded(['check', '--hook', 'claude-code', '--bridge', bridge], input);
    expect(own).toContain('dist/hook/cli/claude-code-tools.js');
    expect(modules).not.toContain(ESM_LOADER);
    expect(modules.filter((m) => m.includes('node_modules'))).toEqual([]);
  });

  it('a usage error: the usage text comes from the ES build, then', () => {
    const { status, stderr } = loaded(['check', '--kind', 'read']);
    expect(status).toBe(2);
    expect(stderr).toMatch(/usage: trajgate check/);
  });

  it('--config: the ES build with the config loader (YAML, schema) is loaded then, not before', () => {
    const config = join(dir, 'trajgate.yaml');
    writeFileSync(config, `version: 1\nworkspace: ${dir}\n`);
    const { modules } = loaded(
      ['check', ...READ, '--bridge', bridge, '--config', config],
      '',
      true,
    );
    expect(modules).toContain('dist/config/load.js');
    expect(modules.some((m) => m.includes('node_modules/yaml'))).toBe(true);
    expect(modules.some((m) => m.includes('node_modules/undici'))).toBe(false);
  });
});
