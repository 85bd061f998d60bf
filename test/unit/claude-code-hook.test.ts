import { describe, expect, it } from 'vitest';
import { claudeCodeAction } from '../../src/cli/claude-code.js';
import { isTrajgateError } from '../../src/errors.js';

/** claudeCodeAction: a Claude Code hook input → judge an event, record a result, or nothing. */
const CWD = '/home/dev/app';
const pre = (tool_name: string, tool_input: Record<string, unknown>, extra = {}) =>
  JSON.stringify({ hook_event_name: 'PreToolUse', cwd: CWD, tool_name, tool_input, ...extra });
const judged = (text: string) => {
  const action = claudeCodeAction(text);
  if (action.type !== 'judge') throw new Error(`not judged: ${action.type}`);
  return action.event;
};

const tree = (target: string) => ({ kind: 'read', target, tree: true });

describe('Glob and Grep: a read of the tree their pattern or glob can reach', () => {
  // [tool, tool_input, the tree read]
  const rows: [string, Record<string, unknown>, string][] = [
    ['Glob', { pattern: '**/*.ts' }, CWD],
    ['Glob', { pattern: 'src/**/*.ts', path: '/x' }, '/x/src'],
    ['Glob', { pattern: 'src/**/*.ts', path: '/x/' }, '/x/src'],
    ['Glob', { pattern: '/etc/**/*.conf' }, '/etc'],
    ['Glob', { pattern: '/**/id_rsa' }, '/'],
    ['Glob', { pattern: '../../.ssh/id_*' }, `${CWD}/../../.ssh`],
    ['Glob', { pattern: '.ssh/id_rsa', path: '/home/dev' }, '/home/dev/.ssh/id_rsa'],
    // One name may match at any depth (a ripgrep glob): the whole path.
    ['Glob', { pattern: 'id_rsa', path: '/home/dev' }, '/home/dev'],
    ['Glob', { pattern: '*.pem', path: '/home/dev' }, '/home/dev'],
    ['Glob', { pattern: '{.ssh,.aws}/*', path: '/home/dev' }, '/home/dev'],
    ['Glob', { pattern: '!src/**', path: '/home/dev' }, '/home/dev'],
    ['Grep', { pattern: 'TODO' }, CWD],
    ['Grep', { pattern: 'TODO', path: 'lib' }, `${CWD}/lib`],
    ['Grep', { pattern: 'BEGIN', path: '/home/dev', glob: '.ssh/*' }, '/home/dev/.ssh'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: '/.aws/**' }, '/home/dev/.aws'],
    [
      'Grep',
      { pattern: 'k', path: '/home/dev', glob: '.config/gh/hosts.yml' },
      '/home/dev/.config/gh/hosts.yml',
    ],
    // ripgrep reads a glob under its path only: an absolute one is anchored there.
    ['Grep', { pattern: 'k', path: '/w', glob: '/etc/*' }, '/w/etc'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: '*.pem' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: 'id_rsa' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: '**/.ssh/*' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: '!node_modules/**' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: 'a/../.ssh/*' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: './.ssh/*' }, '/home/dev'],
    ['Grep', { pattern: 'k', path: '/home/dev', glob: '.s\\sh/*' }, '/home/dev'],
    // A type picks files by name anywhere: it narrows no folder.
    ['Grep', { pattern: 'k', path: '/home/dev', type: 'py' }, '/home/dev'],
  ];
  it.each(rows)('%s %j → tree read of %s', (tool, input, target) => {
    expect(judged(pre(tool, input))).toEqual(tree(target));
  });

  it.each([
    ['a ~ glob', { pattern: 'k', glob: '~/.ssh/*' }, /"tool_input.glob"/],
    ['a numeric glob', { pattern: 'k', glob: 5 }, /"tool_input.glob" is not a string/],
    ['a numeric type', { pattern: 'k', type: ['py'] }, /"tool_input.type" is not a string/],
  ])('Grep with %s → E_EVENT_INVALID', (_name, input, message) => {
    expect(() => claudeCodeAction(pre('Grep', input))).toThrow(message);
  });
});

describe('PreToolUse → the event judged', () => {
  const rows: [string, Record<string, unknown>, object][] = [
    ['Read', { file_path: '/home/dev/app/a.ts' }, { kind: 'read', target: '/home/dev/app/a.ts' }],
    ['Read', { file_path: 'src/a.ts' }, { kind: 'read', target: `${CWD}/src/a.ts` }],
    ['LS', { path: '/home/dev' }, tree('/home/dev')],
    ['Write', { file_path: 'b.ts', content: '' }, { kind: 'write', target: `${CWD}/b.ts` }],
    ['Edit', { file_path: '/etc/hosts' }, { kind: 'write', target: '/etc/hosts' }],
    ['MultiEdit', { file_path: '/w/c.ts', edits: [] }, { kind: 'write', target: '/w/c.ts' }],
    ['NotebookEdit', { notebook_path: 'n.ipynb' }, { kind: 'write', target: `${CWD}/n.ipynb` }],
    ['Bash', { command: 'rm -rf /' }, { kind: 'command', target: CWD, command: 'rm -rf /' }],
    ['Bash', { description: 'no command' }, { kind: 'command', target: CWD }],
    [
      'WebFetch',
      { url: 'https://docs.example.com/x', prompt: 'p' },
      { kind: 'network', target: 'https://docs.example.com/x', method: 'GET' },
    ],
    ['TodoWrite', { todos: [] }, { kind: 'internal', target: 'TodoWrite' }],
    [
      'mcp__github__create_issue',
      { title: 't' },
      { kind: 'tool', target: 'mcp__github__create_issue', arguments: { title: 't' } },
    ],
    ['SomeFutureTool', { x: 1 }, { kind: 'tool', target: 'SomeFutureTool' }],
    ['constructor', {}, { kind: 'tool', target: 'constructor' }],
  ];
  it.each(rows)('%s %j → %j', (tool, input, event) => {
    expect(judged(pre(tool, input))).toEqual(event);
  });

  it('keeps `..` in a relative path for the gateway to judge both readings', () => {
    expect(judged(pre('Write', { file_path: 'link/../x' }))).toEqual({
      kind: 'write',
      target: `${CWD}/link/../x`,
    });
  });

  it('sends the tool_use_id as the call, which links its result', () => {
    expect(judged(pre('Read', { file_path: '/a' }, { tool_use_id: 'toolu_01x' }))).toEqual({
      kind: 'read',
      target: '/a',
      call: 'toolu_01x',
    });
    expect(() => claudeCodeAction(pre('Read', { file_path: '/a' }, { tool_use_id: 7 }))).toThrow(
      /"tool_use_id" is not a string/,
    );
  });

  it('judges an input without hook_event_name as PreToolUse', () => {
    const text = JSON.stringify({ cwd: CWD, tool_name: 'Read', tool_input: { file_path: '/a' } });
    expect(judged(text)).toEqual({ kind: 'read', target: '/a' });
  });
});

describe('every Claude Code built-in tool (2026 set and older names) is mapped', () => {
  // Touch nothing outside the agent: an `internal` event, which no default boundary counts.
  const internal = [
    'Agent',
    'Task',
    'Workflow',
    'TeamCreate',
    'TeamDelete',
    'TaskCreate',
    'TaskGet',
    'TaskList',
    'TaskUpdate',
    'TaskStop',
    'TaskOutput',
    'BashOutput',
    'KillShell',
    'KillBash',
    'TodoWrite',
    'TodoRead',
    'CronCreate',
    'CronDelete',
    'CronList',
    'ScheduleWakeup',
    'EnterPlanMode',
    'ExitPlanMode',
    'exit_plan_mode',
    'AskUserQuestion',
    'Skill',
    'SlashCommand',
    'ToolSearch',
    'WaitForMcpServers',
    'ListMcpResourcesTool',
    'WebSearch',
  ];
  it.each(internal)('%s → internal', (tool) => {
    expect(judged(pre(tool, { prompt: 'p', query: 'q', task_id: 't' }))).toEqual({
      kind: 'internal',
      target: tool,
    });
  });

  // Send data to another party: a `tool` event by name.
  const elsewhere = [
    'Artifact',
    'ShareOnboardingGuide',
    'RemoteTrigger',
    'PushNotification',
    'SendMessage',
    'ListAgents',
  ];
  it.each(elsewhere)('%s → a tool event by name', (tool) => {
    expect(judged(pre(tool, { message: 'm', file_path: '/w/a.html' }))).toEqual({
      kind: 'tool',
      target: tool,
    });
  });

  const rows: [string, Record<string, unknown>, object][] = [
    ['NotebookRead', { notebook_path: 'a.ipynb' }, { kind: 'read', target: `${CWD}/a.ipynb` }],
    [
      'LSP',
      { operation: 'findReferences', filePath: '/etc/x.ts', line: 1, character: 2 },
      { kind: 'read', target: '/etc/x.ts' },
    ],
    [
      'PowerShell',
      { command: 'Get-ChildItem' },
      { kind: 'command', target: CWD, command: 'Get-ChildItem' },
    ],
    [
      'Monitor',
      { command: 'tail -f log', timeout_ms: 1 },
      { kind: 'command', target: CWD, command: 'tail -f log' },
    ],
    [
      'Monitor',
      { ws: { url: 'wss://ci.example.com/events?x=1' }, timeout_ms: 1 },
      { kind: 'network', target: 'https://ci.example.com/events?x=1', method: 'GET' },
    ],
    [
      'Monitor',
      { ws: { url: 'WS://ci.example.com:8080/' }, timeout_ms: 1 },
      { kind: 'network', target: 'http://ci.example.com:8080/', method: 'GET' },
    ],
    ['EnterWorktree', { name: 'fix' }, { kind: 'command', target: CWD }],
    ['EnterWorktree', { path: '/srv/wt/a' }, { kind: 'command', target: '/srv/wt/a' }],
    ['ExitWorktree', { action: 'keep' }, { kind: 'command', target: CWD }],
    [
      'ReadMcpResourceTool',
      { server: 'files', uri: 'file:///w/a' },
      {
        kind: 'tool',
        target: 'ReadMcpResourceTool',
        arguments: { server: 'files', uri: 'file:///w/a' },
      },
    ],
  ];
  it.each(rows)('%s %j → %j', (tool, input, event) => {
    expect(judged(pre(tool, input))).toEqual(event);
  });

  it("sends an MCP call's arguments, strings longer than any path sent empty", () => {
    const content = 'x'.repeat(5000);
    expect(
      judged(pre('mcp__files__write_file', { path: 'a', content, list: [content, 'b'] })),
    ).toEqual({
      kind: 'tool',
      target: 'mcp__files__write_file',
      arguments: { path: 'a', content: '', list: ['', 'b'] },
    });
  });

  it.each([
    ['Monitor', {}, /Monitor without/],
    ['Monitor', { command: 'ls', ws: { url: 'ws://a/' } }, /both "command" and "ws"/],
    ['Monitor', { ws: { url: 'https://a/' } }, /is not ws:\/\/ or wss:\/\//],
    ['Monitor', { ws: 'ws://a/' }, /"tool_input.ws.url" is not a string/],
    ['LSP', { filePath: '~/.ssh/config' }, /give an absolute path/],
    ['EnterWorktree', { path: 5 }, /"tool_input.path" is not a string/],
  ])('%s %j → E_EVENT_INVALID', (tool, input, message) => {
    expect(() => claudeCodeAction(pre(tool, input))).toThrow(message);
  });
});

describe('PostToolUse / PostToolUseFailure → the result recorded', () => {
  const post = (hook: string, extra: Record<string, unknown>) =>
    claudeCodeAction(
      JSON.stringify({
        hook_event_name: hook,
        cwd: CWD,
        tool_name: 'Bash',
        tool_input: { command: 'npm test' },
        tool_use_id: 'toolu_01abc',
        ...extra,
      }),
    );
  const base = {
    kind: 'command',
    target: CWD,
    command: 'npm test',
    tool: 'Bash',
    call: 'toolu_01abc',
  };
  const rows: [string, string, Record<string, unknown>, object][] = [
    ['success', 'PostToolUse', { tool_response: { stdout: 'ok', stderr: '' } }, { ok: true }],
    ['an empty error field', 'PostToolUse', { tool_response: { error: '' } }, { ok: true }],
    [
      'PostToolUseFailure',
      'PostToolUseFailure',
      { error: 'exit 1\n  FAIL x', is_interrupt: false },
      { ok: false, error: 'exit 1 FAIL x' },
    ],
    ['a failure without text', 'PostToolUseFailure', {}, { ok: false, error: 'the tool failed' }],
    [
      'tool_response.is_error',
      'PostToolUse',
      { tool_response: { is_error: true } },
      { ok: false, error: 'the tool reported an error' },
    ],
    [
      'tool_response.interrupted',
      'PostToolUse',
      { tool_response: { interrupted: true } },
      { ok: false, error: 'interrupted' },
    ],
  ];
  it.each(rows)('%s', (_name, hook, extra, result) => {
    expect(post(hook, extra)).toEqual({ type: 'result', result: { ...base, ...result } });
  });

  it('cuts a long error to 1000 characters', () => {
    const action = post('PostToolUseFailure', { error: 'x'.repeat(5000) });
    expect(action.type === 'result' && action.result.error?.length).toBe(1001);
  });
});

describe('other inputs', () => {
  it.each(['SessionStart', 'UserPromptSubmit', 'Stop', 'Notification', 'PermissionRequest'])(
    '%s → nothing judged',
    (hook) => {
      expect(claudeCodeAction(JSON.stringify({ hook_event_name: hook, cwd: CWD }))).toEqual({
        type: 'none',
        hook,
      });
    },
  );

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{"tool_name":', /not JSON/],
    ['empty', '', /not JSON/],
    ['an array', '[]', /not a JSON object/],
    ['no tool_name', JSON.stringify({ cwd: CWD, tool_input: {} }), /no "tool_name"/],
    ['a numeric hook_event_name', JSON.stringify({ hook_event_name: 5 }), /hook_event_name/],
    ['tool_input a string', pre('Read', {}).replace('{}', '"x"'), /"tool_input" is not an object/],
    ['a numeric file_path', pre('Read', { file_path: 5 }), /"tool_input.file_path" is not a/],
    ['Write without file_path', pre('Write', { content: 'x' }), /Write without/],
    ['WebFetch without url', pre('WebFetch', { prompt: 'x' }), /WebFetch without/],
    ['a leading ~', pre('Read', { file_path: '~/.ssh/id_rsa' }), /give an absolute path/],
    ['a file: URI', pre('Write', { file_path: 'file:///etc/x' }), /give an absolute path/],
    ['a ~ Glob pattern', pre('Glob', { pattern: '~/.aws/*' }), /give an absolute path/],
    [
      'a relative path without cwd',
      JSON.stringify({ tool_name: 'Read', tool_input: { file_path: 'a' } }),
      /no absolute "cwd"/,
    ],
    ['Bash with a relative cwd', pre('Bash', { command: 'ls' }, { cwd: 'app' }), /no absolute/],
    [
      'a command line not a string',
      pre('Bash', { command: ['ls'] }),
      /"tool_input.command" is not/,
    ],
  ];
  it.each(bad)('%s → E_EVENT_INVALID', (_name, text, message) => {
    let error: unknown;
    try {
      claudeCodeAction(text);
    } catch (err) {
      error = err;
    }
    expect(isTrajgateError(error) && error.code).toBe('E_EVENT_INVALID');
    expect((error as Error).message).toMatch(message);
  });
});
