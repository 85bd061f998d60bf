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
 * built CLI run under a module loader hook that lists every module it loads. No package from
 * node_modules (undici, yaml, zod), no config loader, no gateway code; the config (YAML and
 * schema) only when --config names one.
 */
const dir = tempDir();
const register = join(dir, 'register.mjs');
writeFileSync(
  join(dir, 'hooks.mjs'),
  "import { appendFileSync } from 'node:fs';\n" +
    'export async function load(url, context, next) {\n' +
    "  appendFileSync(process.env.TRACE_FILE, url + '\\n');\n" +
    '  return next(url, context);\n' +
    '}\n',
);
writeFileSync(
  register,
  "import { register } from 'node:module';\n" +
    "register(new URL('./hooks.mjs', import.meta.url));\n",
);
const READ = ['--kind', 'read', '--target', '/w/a'];
let bridge: string;
beforeAll(async () => {
  bridge = `http://127.0.0.1:${await refusingPort()}`;
});

/** The modules `trajgate ARGS` loads, relative to the repository (builtins as node:NAME). */
function loaded(args: string[], input = ''): { status: number | null; modules: string[] } {
  const trace = join(dir, `trace-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(trace, '');
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, CLI, ...args], {
    input,
    env: { ...process.env, TRACE_FILE: trace, TRAJGATE_AGENT_TOKEN: 'x'.repeat(20) },
    encoding: 'utf8',
    timeout: 15_000,
  });
  const root = pathToFileURL(join(import.meta.dirname, '../..')).href + '/';
  const modules = readFileSync(trace, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((url) => url.replace(root, ''));
  return { status: r.status, modules };
}

describe('trajgate check loads only what it needs', () => {
  it('--kind/--target: a handful of its own modules and node:http', () => {
    const { status, modules } = loaded(['check', ...READ, '--bridge', bridge]);
    expect(status).toBe(2); // the bridge refuses connections: refused, as it must be
    expect(modules.filter((m) => m.includes('node_modules'))).toEqual([]);
    expect(modules).toContain('node:http');
    expect(modules).not.toContain('node:https');
    const own = modules.filter((m) => m.startsWith('dist/'));
    expect(own).not.toContain('dist/config/load.js');
    expect(own.filter((m) => !m.startsWith('dist/cli/') && !m.startsWith('dist/config/'))).toEqual([
      'dist/errors.js',
    ]);
    expect(own.length).toBeLessThanOrEqual(9);
  });

  it('--hook claude-code: the same, with the tool mapping', () => {
    const input = JSON.stringify({
      hook_event_name: 'PreToolUse',
      cwd: '/w',
      tool_name: 'Read',
      tool_input: { file_path: '/w/a' },
    });
    const { modules } = loaded(['check', '--hook', 'claude-code', '--bridge', bridge], input);
    expect(modules).toContain('dist/cli/claude-code-tools.js');
    expect(modules.filter((m) => m.includes('node_modules'))).toEqual([]);
    expect(modules).not.toContain('dist/config/load.js');
  });

  it('--config: the config loader (YAML, schema) is loaded then, not before', () => {
    const config = join(dir, 'trajgate.yaml');
    writeFileSync(config, `version: 1\nworkspace: ${dir}\n`);
    const { modules } = loaded(['check', ...READ, '--bridge', bridge, '--config', config]);
    expect(modules).toContain('dist/config/load.js');
    expect(modules.some((m) => m.includes('node_modules/yaml'))).toBe(true);
    expect(modules.some((m) => m.includes('node_modules/undici'))).toBe(false);
  });
});
