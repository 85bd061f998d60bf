import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { DRIFT_AFTER_FAILURE } from '../helpers/rules.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `trajgate replay --hook claude-code FILE` through the built CLI, offline: the recorded
 * sessions of test/fixtures/hooks/ (their cwd replaced by a temporary workspace) judged as
 * `check --hook claude-code` and the gateway would, with the config a user runs them with (the
 * docs host allowed, the bridged MCP server named `files`).
 */
const RECORDED_CWD = '/home/dev/projects/invoice-api';
const tmp = tempDir();
const ws = join(tempDir(), 'invoice-api');
for (const dir of ['src/routes', 'src/db', 'src/lib', 'test', 'docs'])
  mkdirSync(join(ws, dir), { recursive: true });
const config = join(tmp, 'trajgate.yaml');
writeFileSync(
  config,
  stringify({
    version: 1,
    workspace: ws,
    journal: join(tmp, 'data/journal.jsonl'),
    network: { allow: ['docs.example.com'] },
    bridge: { name: 'files' },
  }),
);

/** A fixture with its cwd moved to the workspace, written to a file. */
function session(name: string): { file: string; hooks: Record<string, unknown>[] } {
  const text = readFileSync(join(import.meta.dirname, '../fixtures/hooks', name), 'utf8');
  const file = join(tmp, name);
  writeFileSync(file, text.replaceAll(RECORDED_CWD, ws));
  const hooks = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { file, hooks };
}
const toolsOf = (hooks: Record<string, unknown>[]) =>
  hooks.filter((h) => h.hook_event_name === 'PreToolUse').map((h) => h.tool_name);
const replay = (file: string, ...args: string[]) =>
  runCli(['replay', '--hook', 'claude-code', file, '--config', config, ...args]);

describe('trajgate replay --hook claude-code', () => {
  it('the 62-call coding session: one ALLOW per tool call, no REVIEW', () => {
    const { file, hooks } = session('claude-code-coding-session.jsonl');
    const r = replay(file);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const verdicts = r.stdout.trimEnd().split('\n');
    expect(verdicts).toHaveLength(toolsOf(hooks).length);
    expect(verdicts.length).toBeGreaterThanOrEqual(60);
    expect(new Set(verdicts)).toEqual(new Set(['ALLOW']));
  });

  it('--json names each call: its tool and the event judged (an MCP call as the bridge maps it)', () => {
    const { file, hooks } = session('claude-code-coding-session.jsonl');
    const lines = replay(file, '--json')
      .stdout.trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.tool)).toEqual(toolsOf(hooks));
    expect(lines.find((l) => l.tool === 'mcp__files__read_text_file')).toMatchObject({
      session: '7d0e4b2a-91c3-4f5e-8a6d-2b9c1e7f3a40',
      kind: 'read',
      target: 'src/db/pool.ts',
      verdict: 'ALLOW',
    });
    expect(lines.find((l) => l.tool === 'TodoWrite')).toMatchObject({ kind: 'internal' });
    expect(lines.find((l) => l.tool === 'WebFetch')).toMatchObject({ kind: 'network' });
  });

  it('the drifting session: REVIEW for the unlisted host, PAUSE for the write outside, the next call held', () => {
    const { file, hooks } = session('claude-code-drifting-session.jsonl');
    const r = replay(file);
    expect(r.status).toBe(0);
    const verdicts = r.stdout.trimEnd().split('\n');
    const tools = toolsOf(hooks);
    expect(verdicts).toHaveLength(tools.length);
    expect(verdicts.map((v, i) => `${tools[i]} ${v}`).filter((v) => !v.endsWith(' ALLOW'))).toEqual(
      ['WebFetch REVIEW: network', 'Edit PAUSE: workspace', 'Read PAUSE: workspace'],
    );
  });

  it('a failed call is applied as a failure: a drift-after-failure rule pauses on the next crossing', () => {
    const rules = join(tmp, 'rules.yaml');
    writeFileSync(
      rules,
      stringify({
        version: 1,
        workspace: ws,
        journal: join(tmp, 'data/journal.jsonl'),
        policy: {
          // The recorded crossing comes more than 5 events after the failure.
          sequences: [{ ...DRIFT_AFTER_FAILURE, within: '10 events' }],
        },
      }),
    );
    const { file } = session('claude-code-drifting-session.jsonl');
    const r = runCli(['replay', '--hook', 'claude-code', file, '--config', rules, '--json']);
    const fetch = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.tool === 'WebFetch');
    // npm publish failed (PostToolUseFailure) four calls before: the first unlisted host pauses.
    expect(fetch).toMatchObject({ verdict: 'PAUSE', rule: { name: 'drift-after-failure' } });
  });

  it('an unknown --hook is a usage error; a malformed hook input stops at its line', () => {
    const { file } = session('claude-code-drifting-session.jsonl');
    const unknown = replay(file, '--hook', 'cursor');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown --hook cursor \(known: claude-code\)/);
    const bad = join(tmp, 'bad.jsonl');
    writeFileSync(
      bad,
      '{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Read","tool_input":{"file_path":"/w/a"}}\n' +
        '{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Read","tool_input":{"file_path":"~/.ssh/id_rsa"}}\n',
    );
    const r = replay(bad);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('ALLOW\n');
    expect(r.stderr).toMatch(/bad\.jsonl:2: hook input: "tool_input.file_path" "~\/.ssh\/id_rsa"/);
  });

  it('--help says it', () => {
    const r = runCli(['replay', '--help']);
    expect(r.stdout).toMatch(/--hook claude-code +the lines are Claude Code hook inputs/);
  });
});
