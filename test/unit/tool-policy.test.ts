import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { isTrajgateError } from '../../src/errors.js';
import type { ToolPolicyConfig } from '../../src/event/tool-policy.js';
import { compileToolPolicy, toolPatternProblem } from '../../src/event/tool-policy.js';

const lists = (allow: string[] = [], deny: string[] = []) => ({ allow, deny });

/** bridge.tools allows reads; readers add listing; agent-2 is denied writes of its own. */
const config: ToolPolicyConfig = {
  bridge: { toolPolicy: lists(['read_*', 'files:get_file_info'], ['files:delete_*']) },
  agents: [
    { id: 'agent-1', roles: ['readers'], tools: lists() },
    { id: 'agent-2', roles: [], tools: lists(['write_file', 'edit_?ile'], ['x*']) },
    { id: 'agent-3', roles: ['quiet'], tools: lists() },
  ],
  roles: {
    readers: { tools: lists(['list_directory']) },
    quiet: { tools: lists([], ['read_media_file']) },
  },
};
const policy = compileToolPolicy(config);

describe('tool policy: the union of allow lists, any deny wins', () => {
  it.each([
    // [session, server, tool, reason or null]
    ['agent-1', 'files', 'read_text_file', null],
    ['agent-1', 'files', 'list_directory', null],
    ['agent-1', 'files', 'get_file_info', null],
    // SERVER:GLOB names one server.
    [
      'agent-1',
      'other',
      'get_file_info',
      'tool get_file_info is not in the tools allowed to agent-1 (bridge.tools.allow, roles.readers.tools.allow)',
    ],
    [
      'agent-1',
      'files',
      'write_file',
      'tool write_file is not in the tools allowed to agent-1 (bridge.tools.allow, roles.readers.tools.allow)',
    ],
    ['agent-2', 'files', 'write_file', null],
    ['agent-2', 'files', 'edit_file', null],
    // `?` is one character; case counts.
    [
      'agent-2',
      'files',
      'edit__file',
      'tool edit__file is not in the tools allowed to agent-2 (bridge.tools.allow, agents[agent-2].tools.allow)',
    ],
    [
      'agent-2',
      'files',
      'Read_file',
      'tool Read_file is not in the tools allowed to agent-2 (bridge.tools.allow, agents[agent-2].tools.allow)',
    ],
    // A deny wins over every allow, at any level.
    [
      'agent-2',
      'files',
      'xread_file',
      'tool xread_file is denied by agents[agent-2].tools.deny: x*',
    ],
    [
      'agent-2',
      'files',
      'delete_file',
      'tool delete_file is denied by bridge.tools.deny: files:delete_*',
    ],
    ['agent-2', 'other', 'delete_file', expect.stringContaining('is not in the tools allowed')],
    [
      'agent-3',
      'files',
      'read_media_file',
      'tool read_media_file is denied by roles.quiet.tools.deny: read_media_file',
    ],
    // No agent of that name (no agents: sessions are addresses): bridge.tools alone.
    ['127.0.0.1', 'files', 'read_file', null],
    [
      '127.0.0.1',
      'files',
      'list_directory',
      'tool list_directory is not in the tools allowed (bridge.tools.allow)',
    ],
    ['127.0.0.1', 'files', 'delete_file', expect.stringContaining('bridge.tools.deny')],
    // Glob characters in a tool name are only characters there.
    ['agent-1', 'files', 'read_.*', null],
    ['agent-1', 'files', 'readXfile', expect.stringContaining('not in the tools allowed')],
  ] as const)('%s %s:%s', (session, server, tool, reason) => {
    expect(policy.refuses(session, server, tool)).toEqual(reason);
  });

  it('with no allow list anywhere every tool not denied is allowed', () => {
    const open = compileToolPolicy({
      bridge: { toolPolicy: lists([], ['rm']) },
      agents: [{ id: 'a', roles: [], tools: lists() }],
      roles: {},
    });
    expect(open.refuses('a', 'files', 'anything')).toBeNull();
    expect(open.refuses('b', 'files', 'anything')).toBeNull();
    expect(open.refuses('a', 'files', 'rm')).toBe('tool rm is denied by bridge.tools.deny: rm');
  });

  it('an agent with its own allow list is held to it, others are not', () => {
    const own = compileToolPolicy({
      bridge: { toolPolicy: lists() },
      agents: [
        { id: 'a', roles: [], tools: lists(['ok']) },
        { id: 'b', roles: [], tools: lists() },
      ],
      roles: {},
    });
    expect(own.refuses('a', 's', 'other')).toBe(
      'tool other is not in the tools allowed to a (agents[a].tools.allow)',
    );
    expect(own.refuses('b', 's', 'other')).toBeNull();
  });

  it('refuses to compile a bad pattern', () => {
    let err: unknown;
    try {
      compileToolPolicy({ bridge: { toolPolicy: lists(['bad name']) }, agents: null, roles: {} });
    } catch (e) {
      err = e;
    }
    expect(isTrajgateError(err) && err.code).toBe('E_PATTERN_INVALID');
  });
});

describe('tool patterns', () => {
  it.each(['read_file', '*', 'files:*', 'a-b_c.d/e?', 'x:y'])('%s is one', (p) => {
    expect(toolPatternProblem(p)).toBeNull();
  });
  it.each(['', ':x', 'files:', 'a b', 'a:b:c', '[ab]', 'x\n', `${'s'.repeat(65)}:x`])(
    '%j is not',
    (p) => {
      expect(toolPatternProblem(p)).toEqual(expect.any(String));
    },
  );
});

describe('bridge.tools keeps its mappings beside the policy', () => {
  const parse = (tools: string) =>
    parseConfig(`version: 1\nworkspace: /tmp\nbridge:\n  tools:\n${tools}`, 'test.yaml', '/tmp');

  it('a mapping named allow or deny (an event object, or a list of them) stays a mapping', () => {
    const config = parse(
      [
        '    allow: { kind: write, target: path }',
        '    deny: [{ kind: read, target: source }]',
        '    grep: { kind: read, target: path, tree: true }',
      ].join('\n'),
    );
    expect(config.bridge.tools).toEqual({
      allow: { kind: 'write', target: 'path' },
      deny: [{ kind: 'read', target: 'source' }],
      grep: { kind: 'read', target: 'path', tree: true },
    });
    expect(config.bridge.toolPolicy).toEqual({ allow: [], deny: [] });
  });

  it('allow and deny lists of patterns are the policy, not tools', () => {
    const config = parse(
      [
        "    allow: ['read_*', 'files:list_directory']",
        '    deny: []',
        '    grep: { kind: read, target: path }',
      ].join('\n'),
    );
    expect(config.bridge.tools).toEqual({ grep: { kind: 'read', target: 'path' } });
    expect(config.bridge.toolPolicy).toEqual({
      allow: ['read_*', 'files:list_directory'],
      deny: [],
    });
    expect([...config.kinds]).not.toContain('allow');
  });

  it('agents and roles default to no lists', () => {
    const config = parseConfig(
      `version: 1\nworkspace: /tmp\nagents: [{ id: a, token: ${'t'.repeat(16)} }]\nroles: { r: {} }`,
      'test.yaml',
      '/tmp',
    );
    expect(config.agents?.[0]?.tools).toEqual({ allow: [], deny: [] });
    expect(config.roles.r?.tools).toEqual({ allow: [], deny: [] });
  });
});
